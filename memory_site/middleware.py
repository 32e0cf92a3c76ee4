"""Request middleware of the project."""

from collections.abc import Callable

from django.http import Http404, HttpRequest, HttpResponse

from memory_site.core.errors import ApplicationError, NotFound

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


class ApplicationErrorMiddleware:
    """The pages' edge for application errors (the API has its exception handler): NotFound is
    Django's 404 page; any other ApplicationError answers its status with its message."""

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
        return None
