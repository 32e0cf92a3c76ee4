"""Writes of legacies and memberships (facts are added by the facts issue's services)."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from facts.models import Legacy, LegacyMembership

LEGACY_NAME_MAX_CHARS = 200


def legacy_create(*, user: AbstractBaseUser, name: str) -> Legacy:
    """Create a legacy; its creator becomes its owner."""
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": ["A legacy needs a name."]})
    if len(name) > LEGACY_NAME_MAX_CHARS:
        raise ValidationError({"name": [f"At most {LEGACY_NAME_MAX_CHARS} characters."]})
    with transaction.atomic():
        legacy = Legacy.objects.create(name=name, created_by=user)
        LegacyMembership.objects.create(legacy=legacy, user=user, role=LegacyMembership.Role.OWNER)
    return legacy


def legacy_member_add(
    *, legacy: Legacy, added_by: AbstractBaseUser, username: str, role: str
) -> LegacyMembership:
    """The owner adds a user by username. Raises PermissionDenied, ValidationError, or
    LookupError for an unknown username."""
    if not LegacyMembership.objects.filter(
        legacy=legacy, user=added_by, role=LegacyMembership.Role.OWNER
    ).exists():
        raise PermissionDenied("Only the legacy's owner can add members.")
    if role not in LegacyMembership.Role.values:
        raise ValidationError({"role": [f"Must be one of: {', '.join(LegacyMembership.Role.values)}."]})
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ValidationError({"username": ["No user has that username."]})
    try:
        with transaction.atomic():
            return LegacyMembership.objects.create(legacy=legacy, user=user, role=role)
    except IntegrityError as exc:
        raise LookupError("That user is already a member of this legacy.") from exc
