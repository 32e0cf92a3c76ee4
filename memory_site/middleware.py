"""Request middleware of the project."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

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
