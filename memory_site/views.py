"""Project-level views: health, and JSON error pages for the API."""

import logging

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from django.views.defaults import page_not_found
from django.views.defaults import server_error as html_server_error

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


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Database, pgvector and job-queue health; 503 when any check fails."""
    checks: dict[str, dict] = {}
    for name, check in (
        ("database", _check_database),
        ("pgvector", _check_pgvector),
        ("queue", _check_queue),
    ):
        try:
            checks[name] = check()
        except Exception as exc:  # a health check reports failures instead of raising
            logger.exception("health check %s failed", name)
            checks[name] = {"ok": False, "error": str(exc)}
    healthy = all(c["ok"] for c in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "error", **checks}, status=200 if healthy else 503
    )


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
    return page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Internal server error.", "code": "error"}, status=500)
    return html_server_error(request)
