"""Legacies (the memorialised person), their members, and the facts extracted about them."""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class Legacy(models.Model):
    """A person being remembered; the unit of tenancy."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="legacies_created"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "legacies"
        ordering = ["name", "created_at"]

    def __str__(self) -> str:
        return self.name


class LegacyMembership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        MEMBER = "member", "Member"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    legacy = models.ForeignKey(Legacy, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="legacy_memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["legacy", "user"], name="unique_legacy_membership"),
            models.CheckConstraint(
                condition=Q(role__in=["owner", "member"]), name="legacy_membership_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.legacy} ({self.role})"


class LegacyFact(models.Model):
    """Seed 000's `legacy_facts`: one user's observation about a legacy, private by default."""

    class Category(models.TextChoices):
        PERSONALITY = "personality"
        HOBBY = "hobby"
        RELATIONSHIP = "relationship"
        MILESTONE = "milestone"
        OCCUPATION = "occupation"
        PREFERENCE = "preference"
        HABIT = "habit"
        OTHER = "other"

    class Visibility(models.TextChoices):
        PRIVATE = "private", "Private"
        SHARED = "shared", "Shared"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    legacy = models.ForeignKey(Legacy, on_delete=models.CASCADE, related_name="facts")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="legacy_facts"
    )
    category = models.CharField(max_length=50, choices=Category.choices)
    content = models.TextField()
    visibility = models.CharField(
        max_length=10, choices=Visibility.choices, default=Visibility.PRIVATE
    )
    source_conversation = models.ForeignKey(
        "conversations.Conversation",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="extracted_facts",
    )
    # The message range of the batch the fact was extracted from (end exclusive, seed 000).
    source_range_start = models.IntegerField(null=True, blank=True)
    source_range_end = models.IntegerField(null=True, blank=True)
    extracted_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The lifecycle (docs/facts.md "Corrections"): a fact is current until a later fact of the
    # same author corrects it; then it points at that fact and is kept as history. Where the
    # correction was said is the correcting fact's source. Cleared again by undoing the
    # correction (facts.services.fact_correction_undo), never by the database on its own.
    superseded_by = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="supersedes",
    )
    superseded_at = models.DateTimeField(null=True, blank=True)
    # Made by a correction (the extraction that found the correction created it): undoing that
    # correction deletes it. A fact stated before, that a correction found again, is kept.
    created_as_correction = models.BooleanField(default=False)
    # Shared by a correction (a private fact of the author's found again as the correction of a
    # shared one takes its place in the family): undoing that correction makes it private again.
    # db_default: a process still running the code before the column (a rolling deploy, migrated
    # first) inserts facts without it.
    shared_by_correction = models.BooleanField(default=False, db_default=False)

    class Meta:
        ordering = ["extracted_at"]
        indexes = [
            models.Index(fields=["legacy", "user"], name="ix_legacy_facts_legacy_user"),
            models.Index(fields=["legacy", "visibility"], name="ix_legacy_facts_legacy_vis"),
            # The prompt and the default lists read current facts only.
            models.Index(
                fields=["legacy", "user", "extracted_at"],
                condition=Q(superseded_by__isnull=True),
                name="ix_legacy_facts_current_user",
            ),
            models.Index(
                fields=["legacy", "visibility", "extracted_at"],
                condition=Q(superseded_by__isnull=True),
                name="ix_legacy_facts_current_vis",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(visibility__in=["private", "shared"]),
                name="legacy_fact_visibility_valid",
            ),
            models.CheckConstraint(
                condition=~Q(superseded_by=F("id")), name="legacy_fact_not_superseded_by_itself"
            ),
        ]

    def __str__(self) -> str:
        return f"[{self.category}] {self.content[:60]}"

    @property
    def is_current(self) -> bool:
        return self.superseded_by_id is None


class FactConflict(models.Model):
    """Two members' current facts about a legacy that state different values of the same
    attribute (born in 1931 / born in 1932): recorded when the second is saved, shown to a
    viewer only while both facts are visible to them (facts.selectors.conflicts_visible_to),
    never resolved by the service. `fact_a` is the one with the smaller id, so a pair is
    recorded once."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    legacy = models.ForeignKey(Legacy, on_delete=models.CASCADE, related_name="fact_conflicts")
    fact_a = models.ForeignKey(LegacyFact, on_delete=models.CASCADE, related_name="+")
    fact_b = models.ForeignKey(LegacyFact, on_delete=models.CASCADE, related_name="+")
    # The attribute both facts state ("married_year", "born_place", ...:
    # memory_site.core.language.attributes).
    attribute = models.CharField(max_length=50)
    detected_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["detected_at"]
        indexes = [models.Index(fields=["legacy", "detected_at"], name="ix_fact_conflict_legacy")]
        constraints = [
            models.UniqueConstraint(fields=["fact_a", "fact_b"], name="unique_fact_conflict"),
            models.CheckConstraint(condition=Q(fact_a__lt=F("fact_b")),
                                   name="fact_conflict_pair_ordered"),
        ]

    def __str__(self) -> str:
        return f"{self.attribute}: {self.fact_a_id} / {self.fact_b_id}"


class LegacyInvitation(models.Model):
    """An owner's invitation to join a legacy's family; the invitee becomes a member only by
    accepting it (docs/facts.md "Invitations"). `username` is the name the owner typed: a row
    is kept for an unknown one too (with no `invited_user`, so nobody can ever answer it), so
    that inviting an unknown and a known username behave the same."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        ACCEPTED = "accepted", "Accepted"
        DECLINED = "declined", "Declined"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    legacy = models.ForeignKey(Legacy, on_delete=models.CASCADE, related_name="invitations")
    username = models.CharField(max_length=255)
    invited_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="legacy_invitations",
    )
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="legacy_invitations_sent"
    )
    role = models.CharField(
        max_length=10, choices=LegacyMembership.Role.choices, default=LegacyMembership.Role.MEMBER
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [
            models.Index(fields=["invited_user", "status"], name="ix_invitation_invitee_status"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["legacy", "username"],
                condition=Q(status="pending"),
                name="unique_pending_invitation",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "accepted", "declined"]),
                name="legacy_invitation_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(role__in=["owner", "member"]), name="legacy_invitation_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.username} to {self.legacy} ({self.status})"
