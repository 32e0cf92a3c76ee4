"""Reads of legacies and facts. Tenancy starts here: only members see anything of a legacy."""

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, F, OuterRef, QuerySet, Subquery
from django.http import Http404

from facts.models import Legacy, LegacyMembership


def legacies_for_user(user: AbstractBaseUser) -> QuerySet[Legacy]:
    """The legacies `user` is a member of (owner or member)."""
    if not user.is_authenticated:
        return Legacy.objects.none()
    return Legacy.objects.filter(memberships__user=user).annotate(my_role=F("memberships__role"))


def legacy_for_member(*, user: AbstractBaseUser, legacy_id: object) -> Legacy:
    """The legacy if `user` is a member; otherwise Http404, the same as if it did not exist."""
    legacy = legacies_for_user(user).filter(pk=legacy_id).first()
    if legacy is None:
        raise Http404("legacy not found")
    return legacy


def membership_for(*, user: AbstractBaseUser, legacy: Legacy) -> LegacyMembership | None:
    if not user.is_authenticated:
        return None
    return LegacyMembership.objects.filter(user=user, legacy=legacy).first()


def legacy_members(*, legacy: Legacy) -> QuerySet[LegacyMembership]:
    return legacy.memberships.select_related("user").order_by("joined_at")


def legacies_with_member_counts(user: AbstractBaseUser) -> QuerySet[Legacy]:
    counts = (
        LegacyMembership.objects.filter(legacy=OuterRef("pk"))
        .values("legacy")
        .annotate(n=Count("id"))
        .values("n")
    )
    return legacies_for_user(user).annotate(member_count=Subquery(counts)).order_by("name")
