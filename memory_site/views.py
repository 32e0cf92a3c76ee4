"""Project-level views: health, and the error pages (JSON for the API)."""

import hmac
import logging

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.template import loader
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from django.views.defaults import page_not_found

from memory_site.checks import pgvector_problem
from memory_site.core.api import INTERNAL_ERROR_MESSAGE

logger = logging.getLogger(__name__)


def _check_database() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        (version,) = cursor.fetchone()
    return {"ok": True, "version": version.split(" on ")[0]}


def _check_pgvector() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    if row is None:
        return {"ok": False, "error": "the vector extension is not installed"}
    problem = pgvector_problem(row[0], None)
    if problem:
        return {"ok": False, "version": row[0], "error": problem}
    return {"ok": True, "version": row[0]}


def _check_queue() -> dict:
    from django.conf import settings
    from django_q.brokers import get_broker
    from django_q.models import Failure, Success

    broker = get_broker()
    return {
        "ok": bool(broker.ping()),
        "broker": settings.Q_BROKER,
        "sync": bool(settings.Q_CLUSTER.get("sync")),
        "queued": broker.queue_size(),
        "succeeded": Success.objects.count(),
        "failed": Failure.objects.count(),
    }


# The details of /healthz, one check each: a function that answers a dict with `ok` (and
# whatever else staff should see) or raises. Add a check here; the public sees only the status.
HEALTH_CHECKS = (
    ("database", _check_database),
    ("pgvector", _check_pgvector),
    ("queue", _check_queue),
)


def _may_see_health_details(request: HttpRequest) -> bool:
    """Staff signed in to the dashboard, or a monitor sending `Authorization: Bearer
    <HEALTHZ_TOKEN>` (no token is accepted while the setting is empty)."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and user.is_staff:
        return True
    token = settings.HEALTHZ_TOKEN
    sent = request.headers.get("Authorization", "")
    return bool(token) and hmac.compare_digest(sent.encode(), f"Bearer {token}".encode())


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """`{"status": "ok"}` (200) or `{"status": "degraded"}` (503 when any check fails) for
    everyone; the checks' details (versions, queue counts, errors) only for staff or the
    monitoring token."""
    checks: dict[str, dict] = {}
    for name, check in HEALTH_CHECKS:
        try:
            checks[name] = check()
        except Exception as exc:  # a health check reports failures instead of raising
            logger.exception("health check %s failed", name)
            checks[name] = {"ok": False, "error": str(exc)}
    healthy = all(c["ok"] for c in checks.values())
    body: dict = {"status": "ok" if healthy else "degraded"}
    if _may_see_health_details(request):
        body.update(checks)
    return JsonResponse(body, status=200 if healthy else 503)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
    return page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """The 500 answer: a stable message and the error id under which
    memory_site.middleware.ApplicationErrorMiddleware logged the exception; nothing of the
    exception itself."""
    error_id = getattr(request, "error_id", "")
    if request.path.startswith("/api/"):
        body = {"detail": INTERNAL_ERROR_MESSAGE, "code": "error"}
        return JsonResponse({**body, "error_id": error_id} if error_id else body, status=500)
    # Rendered without the request's context: whatever failed must not fail the error page.
    return HttpResponseServerError(loader.render_to_string("500.html", {"error_id": error_id}))
