"""Request middleware of the project."""

import logging
from collections.abc import Callable

from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError

from memory_site.core.errors import ApplicationError, NotFound, new_error_id
from memory_site.views import not_found

logger = logging.getLogger(__name__)

# What Django answers with a 4xx of its own (django.core.handlers.exception); the rest is a 500.
CLIENT_ERRORS = (Http404, PermissionDenied, BadRequest, SuspiciousOperation, MultiPartParserError)

# Machine-facing paths outside /api/ that probes call with or without a trailing slash.
SLASH_OPTIONAL_PATHS = frozenset({"/healthz"})


class OptionalTrailingSlashMiddleware:
    """API paths and /healthz are accepted with and without a trailing slash (SPEC: REST API).

    The URLconf declares them without one; this strips it before resolution, so the schema
    lists each path once and no redirect loses a POST body.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        if path.endswith("/") and (
            (path.startswith("/api/") and len(path) > len("/api/"))
            or path.rstrip("/") in SLASH_OPTIONAL_PATHS
        ):
            request.path_info = path.rstrip("/")
        return self.get_response(request)


class ApiNotFoundMiddleware:
    """An API path that no route matches (an id that is not a UUID, say) answers the API's JSON
    404 under DEBUG too. Without DEBUG, Django's handler404 (memory_site.views.not_found) does;
    with it, Django answers its technical 404 page instead: HTML that lists every URL pattern,
    which no API client can read (`make run` serves with DEBUG on)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        # No route matched (a view's own 404, the browsable API's HTML one included, stays).
        if (response.status_code == 404 and request.path.startswith("/api/")
                and getattr(request, "resolver_match", None) is None
                and response.get("Content-Type", "").startswith("text/html")):
            return not_found(request)
        return response


class ApplicationErrorMiddleware:
    """The pages' edge for application errors (the API has its exception handler): NotFound is
    Django's 404 page; any other ApplicationError answers its status with its message. Any
    other exception is logged with a new error id, kept on the request for the 500 page
    (memory_site.views.server_error), which shows the id and nothing else of the error."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, NotFound):
            raise Http404(exception.message) from exception
        if isinstance(exception, ApplicationError):
            return HttpResponse(exception.message, status=exception.status,
                                content_type="text/plain; charset=utf-8")
        if not isinstance(exception, CLIENT_ERRORS):
            request.error_id = new_error_id()
            logger.error("error %s: unhandled %s in %s %s", request.error_id,
                         type(exception).__name__, request.method, request.path,
                         exc_info=exception)
        return None
