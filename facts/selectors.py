"""Reads of legacies and facts. Tenancy starts here: only members see anything of a legacy."""

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery

from facts.models import Legacy, LegacyFact, LegacyInvitation, LegacyMembership
from memory_site.core.errors import NotFound


def legacies_for_user(user: AbstractBaseUser) -> QuerySet[Legacy]:
    """The legacies `user` is a member of (owner or member), with their creator loaded (the API
    shows it for each)."""
    if not user.is_authenticated:
        return Legacy.objects.none()
    return (
        Legacy.objects.filter(memberships__user=user)
        .annotate(my_role=F("memberships__role"))
        .select_related("created_by")
    )


def legacy_for_member(*, user: AbstractBaseUser, legacy_id: object) -> Legacy:
    """The legacy if `user` is a member; otherwise NotFound, the same as if it did not exist
    (also for an id that is not a UUID)."""
    try:
        legacy = legacies_for_user(user).filter(pk=legacy_id).first()
    except (ValidationError, ValueError):
        raise NotFound() from None
    if legacy is None:
        raise NotFound()
    return legacy


def legacy_members(*, legacy: Legacy) -> QuerySet[LegacyMembership]:
    """The family, longest-standing member first."""
    return legacy.memberships.select_related("user").order_by("joined_at", "id")


def invitations_pending_for(user: AbstractBaseUser) -> QuerySet[LegacyInvitation]:
    """The invitations waiting for the user's answer, oldest first."""
    if not user.is_authenticated:
        return LegacyInvitation.objects.none()
    return (
        LegacyInvitation.objects.filter(
            invited_user=user, status=LegacyInvitation.Status.PENDING
        )
        .select_related("legacy", "invited_by")
        .order_by("created_at", "id")
    )


def invitation_for_invitee(*, user: AbstractBaseUser, invitation_id: object) -> LegacyInvitation:
    """An invitation addressed to the user, answered or not; anyone else's, or one whose
    legacy is gone, is NotFound (also an id that is not a UUID)."""
    if not user.is_authenticated:
        raise NotFound()
    try:
        invitation = (
            LegacyInvitation.objects.filter(pk=invitation_id, invited_user=user)
            .select_related("legacy", "invited_by")
            .first()
        )
    except (ValidationError, ValueError):
        raise NotFound() from None
    if invitation is None:
        raise NotFound()
    return invitation


def legacy_pending_invitations(*, legacy: Legacy) -> QuerySet[LegacyInvitation]:
    """The legacy's invitations not answered yet, for its owners (an unknown username's among
    them, which nobody can answer), oldest first."""
    return (
        legacy.invitations.filter(status=LegacyInvitation.Status.PENDING)
        .select_related("invited_by")
        .order_by("created_at", "id")
    )


def is_legacy_owner(*, legacy: Legacy, user: AbstractBaseUser) -> bool:
    return LegacyMembership.objects.filter(
        legacy=legacy, user=user, role=LegacyMembership.Role.OWNER
    ).exists()


def legacy_heir(
    *, role: str | None, others: list[LegacyMembership]
) -> LegacyMembership | None:
    """Who becomes the legacy's owner when a member of `role` (None: not a member) leaves it:
    its longest-standing other member (`others` ordered by joined_at), if the leaver is an
    owner and no other owner remains; otherwise nobody is promoted (None). Leaving, removal
    and erasing all hand legacies on by this rule (facts.services._hand_on)."""
    if role != LegacyMembership.Role.OWNER or not others:
        return None
    if any(other.role == LegacyMembership.Role.OWNER for other in others):
        return None
    return others[0]


@dataclass(frozen=True)
class LeavePreview:
    """What leaving a legacy would do, for the confirmation page (docs/facts.md "Family")."""

    membership: LegacyMembership
    others: list[LegacyMembership]
    heir: LegacyMembership | None
    shared_facts: int

    @property
    def is_last_member(self) -> bool:
        return not self.others


def membership_leave_preview(*, legacy: Legacy, user: AbstractBaseUser) -> LeavePreview:
    """What `membership_leave` would do now for a member of `legacy` (reached through
    legacy_for_member); NotFound if the user is not a member."""
    members = list(legacy_members(legacy=legacy))
    membership = next((m for m in members if m.user_id == user.pk), None)
    if membership is None:
        raise NotFound()
    others = [m for m in members if m.user_id != user.pk]
    return LeavePreview(
        membership=membership,
        others=others,
        heir=legacy_heir(role=membership.role, others=others),
        shared_facts=LegacyFact.objects.filter(
            legacy=legacy, user=user, visibility=LegacyFact.Visibility.SHARED
        ).count(),
    )


def legacies_with_member_counts(user: AbstractBaseUser) -> QuerySet[Legacy]:
    counts = (
        LegacyMembership.objects.filter(legacy=OuterRef("pk"))
        .values("legacy")
        .annotate(n=Count("id"))
        .values("n")
    )
    return legacies_for_user(user).annotate(member_count=Subquery(counts)).order_by("name")


def facts_visible_to(user: AbstractBaseUser, legacy: Legacy) -> QuerySet[LegacyFact]:
    """Seed 000's retrieval: the user's own facts about the legacy plus every member's shared
    ones, oldest extraction first. Nothing unless the user is a member of the legacy."""
    if not user.is_authenticated or not LegacyMembership.objects.filter(
        legacy=legacy, user=user
    ).exists():
        return LegacyFact.objects.none()
    return (
        LegacyFact.objects.filter(legacy=legacy)
        .filter(Q(user=user) | Q(visibility=LegacyFact.Visibility.SHARED))
        .select_related("user")
        .order_by("extracted_at", "id")
    )


def facts_filtered(
    *,
    user: AbstractBaseUser,
    legacy: Legacy,
    category: str | None = None,
    visibility: str | None = None,
    mine: bool = False,
    text: str | None = None,
) -> QuerySet[LegacyFact]:
    """facts_visible_to narrowed by the list filters of the API and the facts page."""
    facts = facts_visible_to(user, legacy)
    if category:
        facts = facts.filter(category=category)
    if visibility:
        facts = facts.filter(visibility=visibility)
    if mine:
        facts = facts.filter(user=user)
    if text and text.strip():
        facts = facts.filter(content__icontains=text.strip())
    return facts


def fact_for_user(*, user: AbstractBaseUser, fact_id: object) -> LegacyFact:
    """A fact the user may see (their own, or a shared one of a legacy they belong to);
    otherwise NotFound, the same as if it did not exist."""
    if not user.is_authenticated:
        raise NotFound()
    fact = (
        LegacyFact.objects.filter(pk=fact_id, legacy__memberships__user=user)
        .filter(Q(user=user) | Q(visibility=LegacyFact.Visibility.SHARED))
        .select_related("user", "legacy")
        .first()
    )
    if fact is None:
        raise NotFound()
    return fact


def fact_for_author(*, user: AbstractBaseUser, fact_id: object) -> LegacyFact:
    """A fact the user may change: NotFound as fact_for_user, PermissionDenied when the user
    can see it (a fellow member's shared fact) but is not its author."""
    fact = fact_for_user(user=user, fact_id=fact_id)
    if fact.user_id != user.pk:
        raise PermissionDenied("Only the fact's author can change it.")
    return fact


def fact_label(fact: LegacyFact) -> str:
    """Seed 000's mark of a fact, the one rule of the prompt, the context parts and the chat
    panel: it follows the visibility, whoever the author is."""
    return "shared" if fact.visibility == LegacyFact.Visibility.SHARED else "personal"


# --- The caller's own data (GET /api/me/data) ------------------------------------------------


def user_data_export(user: AbstractBaseUser) -> dict[str, QuerySet]:
    """The user's memberships and every fact they authored, for the export's
    ExportMembershipSerializer and ExportFactSerializer.

    Nothing of anyone else: not the other members of a legacy, not their facts, shared or not.
    Two queries, whatever the number of rows.
    """
    return {
        "memberships": LegacyMembership.objects.filter(user=user)
        .select_related("legacy")
        .order_by("joined_at", "id"),
        "facts": LegacyFact.objects.filter(user=user)
        .select_related("legacy")
        .order_by("extracted_at", "id"),
    }
