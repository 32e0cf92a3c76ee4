"""The application's own errors: one base class with a code, an HTTP status and a message.

Services and selectors raise these (and Django's ValidationError and PermissionDenied); they
never raise HTTP errors. The API maps them in memory_site.core.api.exception_handler, the
pages in memory_site.middleware.ApplicationErrorMiddleware; views do not catch them.
"""

import uuid
from typing import Any

from django.db import DatabaseError

# PostgreSQL's deadlock_detected, serialization_failure and lock_not_available: the statement
# lost a race with another transaction and was rolled back; the same request again succeeds.
_BUSY_SQLSTATES = frozenset({"40P01", "40001", "55P03"})


def database_busy(exc: BaseException) -> bool:
    """Whether `exc` is a database error that a retry of the whole transaction would not meet
    again (a deadlock, a serialization failure), rather than a fault."""
    return isinstance(exc, DatabaseError) and getattr(
        exc.__cause__, "sqlstate", None) in _BUSY_SQLSTATES


def new_error_id() -> str:
    """A short id that a user quotes and staff look up in the logs: 12 hex digits of a uuid4."""
    return uuid.uuid4().hex[:12]


class ApplicationError(Exception):
    """A request the application refuses: `code` for programs, `message` for people, `status`
    for HTTP, and `extra` fields the API adds to its error body."""

    code = "error"
    status = 400
    default_message = "The request cannot be done."

    def __init__(self, message: str | None = None, **extra: Any):
        self.message = message or self.default_message
        self._extra = extra
        super().__init__(self.message)

    @property
    def extra(self) -> dict[str, Any]:
        return self._extra


class NotFound(ApplicationError):
    """It does not exist, or it is another family's: the two are indistinguishable."""

    code = "not_found"
    status = 404
    default_message = "Not found."


class Conflict(ApplicationError):
    """The request conflicts with the current state."""

    code = "conflict"
    status = 409
    default_message = "The request conflicts with the current state."


class ProviderError(ApplicationError):
    """A model provider failed; what was saved before the call stays saved.

    The provider's own words (`detail`) can echo the prompt, other people's text, keys or
    internals: they go to the logs under `error_id`, never to the user, who gets the stable
    `message` and the same `error_id` (an extra field of the API's error body)."""

    code = "provider_error"
    status = 502
    default_message = "The language model failed."

    def __init__(self, message: str | None = None, *, detail: str = "", **extra: Any):
        self.error_id = new_error_id()
        self.detail = detail
        super().__init__(message, error_id=self.error_id, **extra)
