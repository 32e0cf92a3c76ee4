"""Conversations, the append-only message log, rolling summaries (seed 002) and archived chunks (seed 000)."""

import uuid

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F, Func, Q
from django.db.models.functions import Cast
from pgvector.django import BitField, HnswIndex, VectorField

# The text search configuration of the stored tsvector columns. It is part of the schema (a
# generated column), so it is fixed here rather than read from the environment;
# conversations.checks errors when SEARCH_TEXT_CONFIG names another one.
STORED_TEXT_CONFIG = "english"
# The roles whose messages are retrieval units: what the user and the agent said.
UNIT_ROLES = ("user", "assistant")
# Between a request's Idempotency-Key and a message's part in it, as stored
# (conversations.selectors.idempotency_stored_key): ␟ SYMBOL FOR UNIT SEPARATOR, outside the
# printable ASCII that a client's key is made of.
IDEMPOTENCY_SEPARATOR = "\u241f"


def _search_vector() -> models.GeneratedField:
    """The content's tsvector, computed by PostgreSQL on every write and stored, so that a
    search reads it (and its GIN index) instead of computing to_tsvector per row and query."""
    return models.GeneratedField(
        expression=SearchVector("content", config=STORED_TEXT_CONFIG),
        output_field=SearchVectorField(),
        db_persist=True,
    )


def _embedding() -> VectorField:
    """NULL until embedded (a message is embedded by a job after it is appended; any vector
    after `manage.py reembed` changed the dimensions)."""
    return VectorField(dimensions=settings.EMBEDDING_DIMENSIONS, null=True, blank=True)


def _embedding_bits() -> models.GeneratedField:
    """The embedding's sign bits (pgvector's binary_quantize), computed by PostgreSQL whenever
    the vector is written and stored: 128 bytes for 1,024 dimensions instead of 4 kB, so that
    the search finds its vector candidates by Hamming distance over these (an index-only scan,
    or their HNSW index) and re-ranks only the best of them by exact cosine distance."""
    return models.GeneratedField(
        expression=Cast(Func(F("embedding"), function="binary_quantize", output_field=BitField()),
                        output_field=BitField(length=settings.EMBEDDING_DIMENSIONS)),
        output_field=BitField(length=settings.EMBEDDING_DIMENSIONS, null=True),
        db_persist=True,
    )


def _bits_hnsw(name: str, *, m: int = 16, ef_construction: int = 64) -> HnswIndex:
    return HnswIndex(name=name, fields=["embedding_bits"], m=m, ef_construction=ef_construction,
                     opclasses=["bit_hamming_ops"])


def _embedding_model() -> models.CharField:
    """The key of the embedding model the vector was made with (conversations.embedding.
    model_key), "" while not embedded: vectors of two models are never ranked together."""
    return models.CharField(max_length=200, blank=True, default="")


class Conversation(models.Model):
    """One chat between a user and the agent about a legacy, with seed 004's session state."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        PAUSED = "paused"
        RESUMING = "resuming"
        AWAITING_CLARIFICATION = "awaiting_clarification"
        SHUTDOWN_CLEAN = "shutdown_clean"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    legacy = models.ForeignKey(
        "facts.Legacy", on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=200, blank=True, default="")
    persona = models.TextField(blank=True, default="")
    status = models.CharField(max_length=32, choices=Status.choices, default=Status.ACTIVE)
    active_topics = models.JSONField(default=list, blank=True)
    open_loops = models.JSONField(default=list, blank=True)
    pending_clarifications = models.JSONField(default=list, blank=True)
    last_intent = models.CharField(max_length=64, blank=True, default="")
    turn_count = models.PositiveIntegerField(default=0)
    # The next message sequence; advanced under a row lock so sequences stay gap-free.
    message_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    last_message_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    # Consecutive failures to archive the oldest due batch (a failed archive stores nothing
    # else), so that the sweep backs off instead of calling a failing provider every minute.
    archive_failures = models.PositiveIntegerField(default=0)
    archive_failed_at = models.DateTimeField(null=True, blank=True)
    archive_error = models.TextField(blank=True, default="")
    # The Idempotency-Key of the request that started it (POST /api/ai/conversations): a retry
    # with the key gets this conversation back instead of a second one.
    idempotency_key = models.CharField(max_length=128, null=True, blank=True, editable=False)  # noqa: DJ001
    # The name the user said the family calls the legacy by ("everyone called her freda":
    # Freda), read when its batch was archived; the user's next conversations about the
    # legacy write their facts with it until one says another (summarization.conversation_names).
    called_name = models.CharField(max_length=255, blank=True, default="", editable=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["user", "legacy", "-created_at"], name="ix_conv_user_legacy"),
            models.Index(fields=["status", "last_message_at"], name="ix_conv_status_last_msg"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    status__in=[
                        "active", "paused", "resuming", "awaiting_clarification", "shutdown_clean"
                    ]
                ),
                name="conversation_status_valid",
            ),
            # Built CONCURRENTLY (migration 0011): the conversations table is on every request.
            models.UniqueConstraint(
                fields=["user", "idempotency_key"], condition=Q(idempotency_key__isnull=False),
                name="conversation_idempotency_key_unique",
            ),
        ]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.id}"


class Message(models.Model):
    """Append-only; committed before the API answers (seed 004's autosave)."""

    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        SYSTEM = "system"
        TOOL = "tool"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    sequence = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField()
    token_count = models.PositiveIntegerField(default=0)
    # Tool calls of an assistant message, the tool_call_id of a tool message, and the like.
    metadata = models.JSONField(default=dict, blank=True)
    # NULL, not "", so that the partial unique constraint ignores messages without a key.
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    created_at = models.DateTimeField(auto_now_add=True)
    # Retrieval (conversations.retrieval): every user and assistant message is a unit.
    embedding = _embedding()
    embedding_model = _embedding_model()
    embedding_bits = _embedding_bits()
    search_vector = _search_vector()

    class Meta:
        ordering = ["conversation", "sequence"]
        indexes = [
            # The units in scope embedded with a model, with their sign bits: the exact
            # Hamming scan of a scope is an index-only scan of this index.
            models.Index(
                fields=["conversation", "embedding_model", "sequence"],
                include=["id", "embedding_bits"],
                condition=Q(role__in=UNIT_ROLES), name="ix_message_units",
            ),
            # Messages that are not units (system, tool): few, so that the units of a
            # conversation are its message_count minus these, without counting the units.
            models.Index(
                fields=["conversation"], condition=~Q(role__in=UNIT_ROLES),
                name="ix_message_non_units",
            ),
            # What the embedding sweep looks for: units not embedded yet.
            models.Index(
                fields=["conversation"], condition=Q(role__in=UNIT_ROLES, embedding_model=""),
                name="ix_message_unembedded",
            ),
            GinIndex(fields=["search_vector"], name="ix_message_search_vector"),
            # No HNSW index on the full vectors: the search finds candidates by the sign bits
            # and reads full vectors by primary key only (migration 0007 dropped it; it cost
            # every embedded message most of its write time).
            # m=8, ef_construction=32 (chunks keep 16/64): cheaper to insert every embedded
            # message into, the same search quality measured (docs/benchmarks.md, Scale).
            _bits_hnsw("ix_message_embedding_bits", m=8, ef_construction=32),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "sequence"], name="unique_message_sequence"
            ),
            models.UniqueConstraint(
                fields=["conversation", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="unique_message_idempotency_key",
            ),
            models.CheckConstraint(
                condition=Q(role__in=["user", "assistant", "system", "tool"]),
                name="message_role_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.sequence} {self.role}: {self.content[:50]}"

    @property
    def client_idempotency_key(self) -> str | None:
        """The Idempotency-Key of the request that wrote the message, as the client sent it."""
        if self.idempotency_key is None:
            return None
        return self.idempotency_key.split(IDEMPOTENCY_SEPARATOR, 1)[0]


class ConversationMemory(models.Model):
    """Seed 002's `memory` table: the rolling sliding-window summary and its version chain."""

    class Status(models.TextChoices):
        PROCESSING = "processing"
        COMPLETED = "completed"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="memories"
    )
    memory_text = models.TextField(blank=True, default="")
    start_sequence = models.PositiveIntegerField()
    end_sequence = models.PositiveIntegerField()
    base_memory = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="derived"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROCESSING)
    generation_time_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "conversation memories"
        ordering = ["conversation", "created_at"]
        indexes = [
            models.Index(
                fields=["conversation", "status", "-end_sequence"],
                name="ix_memory_conv_status_end",
            ),
        ]
        constraints = [
            # The database, not a check-then-insert, keeps one summarisation at a time.
            models.UniqueConstraint(
                fields=["conversation"],
                condition=Q(status="processing"),
                name="one_processing_memory_per_conversation",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["processing", "completed", "failed"]),
                name="conversation_memory_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(start_sequence__lte=models.F("end_sequence")),
                name="conversation_memory_range_ordered",
            ),
        ]

    def __str__(self) -> str:
        return f"memory {self.start_sequence}-{self.end_sequence} ({self.status})"


class ConversationChunk(models.Model):
    """Seed 000's `conversation_chunks`: an archived, embedded summary of a message range.

    The range is end-exclusive: message_range_end = last_summarized_end + BATCH_SIZE.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="chunks"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversation_chunks"
    )
    legacy = models.ForeignKey(
        "facts.Legacy", on_delete=models.CASCADE, related_name="conversation_chunks"
    )
    content = models.TextField()
    embedding = _embedding()
    embedding_model = _embedding_model()
    embedding_bits = _embedding_bits()
    search_vector = _search_vector()
    message_range_start = models.PositiveIntegerField()
    message_range_end = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["conversation", "message_range_start"]
        indexes = [
            # A user's chunks about a legacy, by conversation: a search reads its scope's chunk
            # counts and the sign bits of all of them from this index alone (the bits are NULL
            # exactly when the vector is), and the newest conversations' chunks by it. Chunks
            # have no HNSW index of their bits: no search reads one (retrieval._vector_scan).
            models.Index(fields=["user", "legacy", "conversation", "embedding_model"],
                         include=["id", "embedding_bits"], name="ix_chunk_units"),
            GinIndex(fields=["search_vector"], name="ix_chunk_search_vector"),
            HnswIndex(
                name="ix_conversation_chunks_embed",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "message_range_start", "message_range_end"],
                name="ix_conversation_chunks_range",
            ),
            models.CheckConstraint(
                condition=Q(message_range_start__lt=models.F("message_range_end")),
                name="conversation_chunk_range_ordered",
            ),
        ]

    def __str__(self) -> str:
        return f"chunk {self.message_range_start}-{self.message_range_end}"
