"""Seed 003's versioned agent memories (per user) and seed 001's places of interest."""

import secrets
import string
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

SHORT_ID_ALPHABET = string.ascii_letters + string.digits  # A-Za-z0-9
SHORT_ID_LENGTH = 8


def generate_short_id() -> str:
    """8 characters over A-Za-z0-9 (62^8 ≈ 2.2e14 ids), from `secrets`."""
    return "".join(secrets.choice(SHORT_ID_ALPHABET) for _ in range(SHORT_ID_LENGTH))


class ChangeOrigin(models.TextChoices):
    """Who made a change to a memory, and where (shown on the dashboard with each version)."""

    AGENT = "agent", "the agent, in a chat turn"
    DASHBOARD = "dashboard", "you, on the dashboard"
    API = "api", "you, through the API"
    COMMAND = "command", "you, with /memory"
    UNKNOWN = "unknown", "before changes were attributed"


class AgentMemory(models.Model):
    """A logical memory — the thing remembered; its content lives in versions."""

    class Category(models.TextChoices):
        PERSON = "person"
        PREFERENCE = "preference"
        CONTEXT = "context"
        PROJECT = "project"

    id = models.CharField(
        primary_key=True, max_length=SHORT_ID_LENGTH, default=generate_short_id, editable=False
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent_memories"
    )
    category = models.CharField(max_length=50, choices=Category.choices)
    # Nullable as in seed 003: "no subject" is not the empty subject.
    subject = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    created_at = models.DateTimeField(auto_now_add=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    # Set (with deleted_at) when the token budget evicted the memory: it leaves the memory
    # document too, but its history stays visible to the owner.
    evicted_at = models.DateTimeField(null=True, blank=True)
    # Who deleted it (blank while active) and, for the agent, the user message of that turn.
    deleted_origin = models.CharField(max_length=16, choices=ChangeOrigin.choices, blank=True,
                                      default="")
    deleted_source_message = models.ForeignKey(
        "conversations.Message",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="memory_deletions",
    )

    class Meta:
        verbose_name_plural = "agent memories"
        ordering = ["category", "created_at"]
        indexes = [
            models.Index(fields=["user", "category", "created_at"], name="idx_agent_mem_user_cat"),
            models.Index(fields=["user", "subject"], name="idx_agent_mem_user_subject"),
            models.Index(fields=["deleted_at"], name="idx_agent_mem_deleted_at"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(category__in=["person", "preference", "context", "project"]),
                name="agent_memory_category_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"[{self.id}] {self.subject or self.category}"

    @property
    def is_active(self) -> bool:
        return self.deleted_at is None


class AgentMemoryVersion(models.Model):
    """One version of a memory's content; versions are numbered 1, 2, 3, …"""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    memory = models.ForeignKey(AgentMemory, on_delete=models.CASCADE, related_name="versions")
    version_number = models.PositiveIntegerField()
    content = models.TextField()
    source_conversation = models.ForeignKey(
        "conversations.Conversation",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="memory_versions",
    )
    source_message = models.ForeignKey(
        "conversations.Message",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="memory_versions",
    )
    origin = models.CharField(max_length=16, choices=ChangeOrigin.choices)
    # The version whose text a restore or revert brought back (None for new text).
    restored_from = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["memory", "version_number"]
        indexes = [models.Index(fields=["created_at"], name="idx_memory_versions_created")]
        constraints = [
            models.UniqueConstraint(
                fields=["memory", "version_number"], name="unique_memory_version_number"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.memory_id} v{self.version_number}"


class Place(models.Model):
    """Seed 001's place of interest, scoped to a user."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="places"
    )
    place_id = models.CharField(max_length=200)
    name = models.CharField(max_length=200)
    notes = models.TextField(blank=True, default="")
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["added_at"]
        constraints = [
            models.UniqueConstraint(fields=["user", "place_id"], name="unique_place_per_user"),
        ]

    def __str__(self) -> str:
        return self.name


class PlaceMention(models.Model):
    """A conversation (and message) that mentioned a place, and when."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    place = models.ForeignKey(Place, on_delete=models.CASCADE, related_name="mentions")
    conversation = models.ForeignKey(
        "conversations.Conversation",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="place_mentions",
    )
    message = models.ForeignKey(
        "conversations.Message",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="place_mentions",
    )
    mentioned_at = models.DateTimeField()

    class Meta:
        ordering = ["mentioned_at"]
        indexes = [models.Index(fields=["place", "conversation"], name="idx_place_mention_conv")]

    def __str__(self) -> str:
        return f"{self.place} mentioned at {self.mentioned_at:%Y-%m-%d}"
