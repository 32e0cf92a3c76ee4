"""Shared REST API pieces: the one exception handler and its error format, pagination."""

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from memory_site.core.errors import ApplicationError, database_busy, new_error_id
from memory_site.core.throttling import refused_credentials_throttled

logger = logging.getLogger(__name__)

# What a client is told of an error the code did not expect; the details are logged.
INTERNAL_ERROR_MESSAGE = "Internal server error."
BODY_TOO_LARGE_MESSAGE = (
    "The request body is larger than {limit} bytes (DATA_UPLOAD_MAX_MEMORY_SIZE): nothing was "
    "read; send it in smaller requests (a batch of fewer messages)."
)


def _first_message(errors: Any) -> str:
    if isinstance(errors, dict):
        for field, value in errors.items():
            inner = _first_message(value)
            return inner if field in ("non_field_errors", "detail") else f"{field}: {inner}"
    if isinstance(errors, list) and errors:
        return _first_message(errors[0])
    return str(errors)


def _as_drf_validation_error(exc: DjangoValidationError) -> exceptions.ValidationError:
    if hasattr(exc, "error_dict"):
        return exceptions.ValidationError(exc.message_dict)
    return exceptions.ValidationError({"non_field_errors": exc.messages})


def exception_handler(exc: Exception, context: dict) -> Response | None:
    """The one place API errors are mapped (views catch none of them). Every API error is
    `{"detail": message, "code": code}`, plus `errors` per field on 400 and the `extra` fields
    of an ApplicationError. Django's ValidationError (from a service) is a 400 with field
    errors, PermissionDenied a 403, Http404 and NotFound a 404. Anything else is a 500 with
    an `error_id`: the traceback goes to the log under that id, never to the client (nor does
    a ProviderError's provider text: the client gets its `error_id`)."""
    if isinstance(exc, ApplicationError):
        set_rollback()
        return Response({"detail": exc.message, "code": exc.code, **exc.extra}, status=exc.status)
    if database_busy(exc):
        return busy_response(exc, context)
    if isinstance(exc, RequestDataTooBig):
        set_rollback()
        return Response({"detail": BODY_TOO_LARGE_MESSAGE.format(
            limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE), "code": "too_large"}, status=413)
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        exc = refused_credentials_throttled(context.get("request"), context.get("view")) or exc
    if isinstance(exc, DjangoValidationError):
        exc = _as_drf_validation_error(exc)
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    response = drf_exception_handler(exc, context)
    if response is None:
        return internal_error_response(exc, context)
    if isinstance(exc, exceptions.ValidationError):
        response.data = {
            "detail": _first_message(exc.detail),
            "code": "invalid",
            "errors": exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail},
        }
    elif isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        response.data = {
            "detail": str(exc.detail) if not isinstance(exc.detail, dict | list) else _first_message(exc.detail),
            "code": codes if isinstance(codes, str) else "error",
        }
    return response


BUSY_MESSAGE = ("Another change to the same data was under way and this request was stopped "
                "to let it finish; nothing of it was written. Send it again.")


def busy_response(exc: Exception, context: dict) -> Response:
    """503 `busy` with Retry-After for a request that lost a race in the database (a deadlock
    PostgreSQL broke by rolling it back): nothing was written and the same request again
    succeeds, so it is not a fault of the service's (a 500)."""
    error_id = new_error_id()
    request = context.get("request")
    logger.warning("error %s: %s %s lost a database race and was rolled back: %s", error_id,
                   getattr(request, "method", "?"), getattr(request, "path", "?"),
                   str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    set_rollback()
    return Response({"detail": BUSY_MESSAGE, "code": "busy", "error_id": error_id}, status=503,
                    headers={"Retry-After": "1"})


def internal_error_response(exc: Exception, context: dict) -> Response:
    """500 in the error format, with an error id that the log line of the traceback carries."""
    error_id = new_error_id()
    request = context.get("request")
    logger.error(
        "error %s: unhandled %s in %s %s", error_id, type(exc).__name__,
        getattr(request, "method", "?"), getattr(request, "path", "?"), exc_info=exc,
    )
    set_rollback()
    return Response(
        {"detail": INTERNAL_ERROR_MESSAGE, "code": "error", "error_id": error_id}, status=500
    )


class ErrorSerializer(serializers.Serializer):
    """The body of every API error, as exception_handler writes it."""

    detail = serializers.CharField(help_text="What went wrong, in words for people.")
    code = serializers.CharField(
        help_text="What went wrong, for programs: invalid, not_authenticated, "
        "authentication_failed, permission_denied, not_found, conflict, throttled, …"
    )
    errors = serializers.DictField(
        required=False,
        help_text="400 only: the messages per field (`non_field_errors` for the whole input): "
        "a list of texts, or for a list or object field the same shape again, keyed by "
        "index or name.",
    )
    error_id = serializers.CharField(
        required=False,
        help_text="500, 502 and 503 only: the id under which the details are logged; quote it "
        "to support.",
    )


ERROR_DESCRIPTIONS = {
    400: "Invalid input; `errors` has the messages per field.",
    401: "No credentials, or invalid ones.",
    403: "A member may see this but not change it.",
    404: "Not found, or of another family: the two are indistinguishable.",
    409: "The request conflicts with the current state.",
    429: "Over a rate limit (`throttled`); `Retry-After` says in how many seconds to retry.",
    503: "`busy`: the request lost a race with another change to the same data and nothing "
    "was written; send it again after `Retry-After` seconds.",
}


def error_responses(
    *statuses: int, descriptions: dict[int, str] | None = None
) -> dict[int, OpenApiResponse]:
    """The error answers of an endpoint for `extend_schema(responses=...)`, each with the
    shared error body; `descriptions` replaces the generic text of a status."""
    texts = ERROR_DESCRIPTIONS | (descriptions or {})
    return {code: OpenApiResponse(ErrorSerializer, description=texts[code]) for code in statuses}


def _error_answer(description: str) -> dict:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def document_shared_errors(result: dict, generator: Any, request: Any, public: bool) -> dict:
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS): the answers an operation
    gives besides its own. Every API view is rate-limited (429); a page asked with a
    malformed `?limit=` or `?offset=` is a 400; a body is refused over DATA_UPLOAD_MAX_MEMORY_SIZE
    (413) or in a media type the API does not parse (415); a write may lose a race in the
    database (503 `busy`)."""
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            responses = operation.setdefault("responses", {})
            query = {p["name"] for p in operation.get("parameters", []) if p.get("in") == "query"}
            if query & {"limit", "offset"}:
                responses.setdefault("400", _error_answer(
                    "A malformed `limit` or `offset`; `errors` names it."
                ))
            if "requestBody" in operation:
                responses.setdefault("413", _error_answer(
                    "`too_large`: the body is over DATA_UPLOAD_MAX_MEMORY_SIZE; nothing written."))
                responses.setdefault("415", _error_answer(
                    "`unsupported_media_type`: send the body as application/json."))
            if method != "get":
                responses.setdefault("503", _error_answer(ERROR_DESCRIPTIONS[503]))
            responses.setdefault("429", _error_answer(ERROR_DESCRIPTIONS[429]))
    return result


class IsoDateTimeField(serializers.DateTimeField):
    """A datetime as Python's isoformat (`+00:00`, not DRF's `Z`): the format of the export and
    of seed 001's memory document, which are files as much as answers."""

    def to_representation(self, value: Any) -> str:
        return value.isoformat()


# The largest limit or offset a client may send: PostgreSQL's integer, far beyond any page.
MAX_PAGE_NUMBER = 2**31 - 1


class ItemsPagination(LimitOffsetPagination):
    """`{<items_key>: [...], "total": n, "limit": l, "offset": o}` with a maximum page size."""

    items_key = "results"

    @property
    def default_limit(self) -> int:  # type: ignore[override]
        return settings.API_PAGE_SIZE

    @property
    def max_limit(self) -> int:  # type: ignore[override]
        return settings.API_MAX_PAGE_SIZE

    def _page_number(self, request: Request, name: str, minimum: int, default: int,
                     note: str = "") -> int:
        """A page parameter as strict as the schema says: digits only, from `minimum` to
        MAX_PAGE_NUMBER; anything else (`null`, `1.5`, `-1`) is a 400, not silently the
        default."""
        text = request.query_params.get(name)
        if text is None:
            return default
        if not (text.isascii() and text.isdigit() and minimum <= int(text) <= MAX_PAGE_NUMBER):
            raise exceptions.ValidationError(
                {name: [f"Must be an integer from {minimum} to {MAX_PAGE_NUMBER}.{note}"]}
            )
        return int(text)

    def get_limit(self, request: Request) -> int:
        limit = self._page_number(
            request, self.limit_query_param, 1, self.default_limit,
            note=f" A page holds at most {self.max_limit} items: a larger limit gives that many.")
        return min(limit, self.max_limit)

    def get_offset(self, request: Request) -> int:
        return self._page_number(request, self.offset_query_param, 0, 0)

    def get_schema_operation_parameters(self, view: Any) -> list[dict]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.limit_query_param:
                parameter["schema"].update(minimum=1, maximum=MAX_PAGE_NUMBER)
                parameter["description"] = (
                    f"Items per page, at least 1 (default API_PAGE_SIZE); more than "
                    f"API_MAX_PAGE_SIZE ({self.max_limit}) gives that many."
                )
            elif parameter["name"] == self.offset_query_param:
                parameter["schema"].update(minimum=0, maximum=MAX_PAGE_NUMBER)
                parameter["description"] = "How many items to skip (default 0)."
        return parameters

    def get_paginated_response(self, data: list) -> Response:
        return Response(
            {self.items_key: data, "total": self.count, "limit": self.limit, "offset": self.offset}
        )

    def get_paginated_response_schema(self, schema: dict) -> dict:
        return {
            "type": "object",
            "required": [self.items_key, "total"],
            "properties": {
                self.items_key: schema,
                "total": {"type": "integer"},
                "limit": {"type": "integer"},
                "offset": {"type": "integer"},
            },
        }


def paginated(items_key: str) -> type[ItemsPagination]:
    return type(f"{items_key.title()}Pagination", (ItemsPagination,), {"items_key": items_key})


def paginate(request: Request, queryset: Any, serializer_class: Any, items_key: str,
             view: Any = None) -> Response:
    """Paginate a queryset into the list envelope for function-free APIViews."""
    paginator = paginated(items_key)()
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)
