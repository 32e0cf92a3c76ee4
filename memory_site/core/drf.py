"""Helpers that turn service exceptions into API errors."""

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions


def _as_drf_validation_error(exc: DjangoValidationError) -> exceptions.ValidationError:
    if hasattr(exc, "error_dict"):
        return exceptions.ValidationError(exc.message_dict)
    return exceptions.ValidationError({"non_field_errors": exc.messages})


@contextmanager
def service_errors() -> Iterator[None]:
    """Django's ValidationError from a service becomes a DRF 400 with field errors."""
    try:
        yield
    except DjangoValidationError as exc:
        raise _as_drf_validation_error(exc) from exc
