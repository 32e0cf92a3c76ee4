"""The rule every service applies to user-written text: PostgreSQL text cannot hold NUL."""

from django.core.exceptions import ValidationError

# DRF's CharField says the same, so an API answers alike whether its serializer or a
# service finds the character.
NUL_MESSAGE = "Null characters are not allowed."


def has_nul(value: object) -> bool:
    return isinstance(value, str) and "\x00" in value


def nul_errors(**fields: object) -> dict[str, list[str]]:
    """`{field: [NUL_MESSAGE]}` for each given text that contains a NUL character."""
    return {name: [NUL_MESSAGE] for name, value in fields.items() if has_nul(value)}


def reject_nul(**fields: object) -> None:
    """Raise a ValidationError naming each given text that contains a NUL character, before
    PostgreSQL would fail on it (a DataError, an answer 500)."""
    if errors := nul_errors(**fields):
        raise ValidationError(errors)
