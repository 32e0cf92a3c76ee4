"""Reads of conversations and messages, always scoped to the conversation's own user."""

from datetime import UTC, datetime
from typing import NamedTuple

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db.models import (
    Count,
    DateTimeField,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    FloatField,
    Func,
    Max,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import Coalesce, Least, Power
from django.http import Http404
from django.utils import timezone

from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message


def conversations_for_user(user: AbstractBaseUser) -> QuerySet[Conversation]:
    """The user's own conversations, in legacies they still belong to."""
    if not user.is_authenticated:
        return Conversation.objects.none()
    return Conversation.objects.filter(user=user, legacy__memberships__user=user)


def conversation_for_user(*, user: AbstractBaseUser, conversation_id: object) -> Conversation:
    """The conversation if it is the user's; otherwise Http404, as if it did not exist (also
    for an id that is not a UUID)."""
    try:
        conversation = (
            conversations_for_user(user).select_related("legacy").filter(pk=conversation_id).first()
        )
    except (ValidationError, ValueError):
        raise Http404("conversation not found") from None
    if conversation is None:
        raise Http404("conversation not found")
    return conversation


def idempotency_key_used(*, conversation: Conversation, key: str) -> bool:
    """Whether a message of the conversation was saved under this Idempotency-Key (or its
    turn reply under `<key>:reply`)."""
    return Message.objects.filter(
        conversation=conversation, idempotency_key__in=[key, f"{key}:reply"]
    ).exists()


def messages_for_conversation(
    *, conversation: Conversation, after: int | None = None
) -> QuerySet[Message]:
    messages = Message.objects.filter(conversation=conversation)
    if after is not None:
        messages = messages.filter(sequence__gt=after)
    return messages.order_by("sequence")


# --- Memory pipelines (jobs and the sweep) ----------------------------------------------------


def latest_completed_memory(*, conversation: Conversation) -> ConversationMemory | None:
    """Seed 002's read: the completed summary with the highest end sequence."""
    return (
        ConversationMemory.objects.filter(
            conversation=conversation, status=ConversationMemory.Status.COMPLETED
        )
        .order_by("-end_sequence", "-created_at")
        .first()
    )


def last_summarized_end(*, conversation: Conversation) -> int:
    """Seed 000's `last_summarized_end`: the end (exclusive) of the archived prefix, 0 if none."""
    end = ConversationChunk.objects.filter(conversation=conversation).aggregate(
        end=Max("message_range_end")
    )["end"]
    return end or 0


_NEVER = datetime(1970, 1, 1, tzinfo=UTC)


def _retry_at(failed_at: str, failures: str) -> ExpressionWrapper:
    """When work that failed `failures` times in a row, last at `failed_at`, may be tried
    again: MEMORY_RETRY_BACKOFF_SECONDS doubled for each failure after the first, at most
    MEMORY_RETRY_BACKOFF_MAX_SECONDS. NULL when it has not failed."""
    # 2**30 times any base exceeds any cap; the bound keeps power() finite after years of failing.
    doublings = Least(F(failures) - 1, Value(30))
    seconds = Least(
        Value(float(settings.MEMORY_RETRY_BACKOFF_SECONDS))
        * Power(Value(2.0), doublings, output_field=FloatField()),
        Value(float(settings.MEMORY_RETRY_BACKOFF_MAX_SECONDS)),
        output_field=FloatField(),
    )
    interval = Func(seconds, template="make_interval(secs => %(expressions)s)",
                    output_field=DurationField())
    return ExpressionWrapper(F(failed_at) + interval, output_field=DateTimeField())


def _with_retry_times(conversations: QuerySet[Conversation]) -> QuerySet[Conversation]:
    """Annotate `summary_retry_at` (from the rolling summaries that failed since the latest
    completed one) and `archive_retry_at` (from the archive failures in a row); NULL for no
    failure."""
    memories = ConversationMemory.objects.filter(conversation=OuterRef("pk"))
    failed = memories.filter(
        status=ConversationMemory.Status.FAILED, created_at__gt=OuterRef("summary_since")
    )
    return conversations.annotate(
        summary_since=Coalesce(
            Subquery(
                memories.filter(status=ConversationMemory.Status.COMPLETED)
                .order_by("-created_at").values("created_at")[:1]
            ),
            Value(_NEVER),
        ),
    ).annotate(
        summary_failures=Coalesce(
            Subquery(failed.order_by().values("conversation").annotate(n=Count("pk")).values("n")),
            Value(0),
        ),
        # When the last failed attempt started: a row the sweep recovered from a dead worker
        # failed long before it was marked, and waits no longer for that.
        summary_failed_at=Subquery(failed.order_by("-created_at").values("created_at")[:1]),
    ).annotate(
        summary_retry_at=_retry_at("summary_failed_at", "summary_failures"),
        archive_retry_at=_retry_at("archive_failed_at", "archive_failures"),
    )


class RetryTimes(NamedTuple):
    """When the conversation's rolling summary and archive may be tried again (None: now)."""

    summary: datetime | None
    archive: datetime | None


def memory_retry_times(*, conversation: Conversation) -> RetryTimes:
    summary, archive = _with_retry_times(Conversation.objects.filter(pk=conversation.pk)).values_list(
        "summary_retry_at", "archive_retry_at"
    ).get()
    return RetryTimes(summary=summary, archive=archive)


def conversations_due_for_summarization() -> QuerySet[Conversation]:
    """Every conversation a summarisation job has work for, now: a rolling summary behind its
    last message (and none processing), more than SUMMARIZATION_THRESHOLD unarchived
    messages, or a closed conversation with an unarchived tail — each only once the backoff
    after its failures in a row has passed (`_retry_at`)."""
    now = timezone.now()
    completed = ConversationMemory.objects.filter(
        conversation=OuterRef("pk"), status=ConversationMemory.Status.COMPLETED
    ).order_by("-end_sequence").values("end_sequence")[:1]
    processing = ConversationMemory.objects.filter(
        conversation=OuterRef("pk"), status=ConversationMemory.Status.PROCESSING
    )
    archived = ConversationChunk.objects.filter(conversation=OuterRef("pk")).order_by(
        "-message_range_end"
    ).values("message_range_end")[:1]
    last = F("message_count") - 1
    summary_due = (
        Q(message_count__gt=settings.MEMORY_SUMMARIZE_AFTER_SEQ, is_processing=False)
        & (Q(completed_end__isnull=True) | Q(completed_end__lt=last))
        & (Q(summary_retry_at__isnull=True) | Q(summary_retry_at__lte=now))
    )
    archive_due = (
        Q(message_count__gt=F("archived_end") + settings.SUMMARIZATION_THRESHOLD)
        | Q(status=Conversation.Status.SHUTDOWN_CLEAN, message_count__gt=F("archived_end"))
    ) & (Q(archive_retry_at__isnull=True) | Q(archive_retry_at__lte=now))
    return (
        _with_retry_times(Conversation.objects.all())
        .annotate(
            completed_end=Subquery(completed),
            archived_end=Coalesce(Subquery(archived), Value(0)),
            is_processing=Exists(processing),
        )
        .filter(summary_due | archive_due)
        .order_by("last_message_at")
    )


def conversations_idle_since(*, cutoff: datetime) -> QuerySet[Conversation]:
    """Open conversations whose last message is older than `cutoff`."""
    return Conversation.objects.filter(last_message_at__lt=cutoff).exclude(
        status=Conversation.Status.SHUTDOWN_CLEAN
    )


# --- Transcript page (dashboard): a conversation's summaries ---------------------------------


def rolling_summaries_for_conversation(*, conversation: Conversation) -> QuerySet[ConversationMemory]:
    """Seed 002's rolling-summary versions of the conversation, oldest first."""
    return ConversationMemory.objects.filter(conversation=conversation).order_by(
        "created_at", "end_sequence"
    )


def archived_chunks_for_conversation(*, conversation: Conversation) -> QuerySet[ConversationChunk]:
    """Seed 000's archived summary chunks of the conversation, in message order."""
    return (
        ConversationChunk.objects.filter(conversation=conversation)
        .defer("embedding")
        .order_by("message_range_start")
    )


# --- The caller's own data (GET /api/me/data) ------------------------------------------------


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def user_data_export(user: AbstractBaseUser) -> dict:
    """Every conversation of the user (also in legacies they have left) with its session state,
    messages, rolling summaries and archived chunks, JSON-ready. Chunks come without their
    embedding vectors (derived from the content, and not readable). Four queries, whatever the
    number of rows."""
    conversations = (
        Conversation.objects.filter(user=user)
        .prefetch_related(
            Prefetch("messages", queryset=Message.objects.order_by("sequence")),
            Prefetch(
                "memories",
                queryset=ConversationMemory.objects.order_by("created_at", "end_sequence", "id"),
            ),
            Prefetch(
                "chunks",
                queryset=ConversationChunk.objects.defer("embedding").order_by(
                    "message_range_start"
                ),
            ),
        )
        .order_by("created_at", "id")
    )
    return {
        "conversations": [
            {
                "id": str(conversation.id),
                "legacy_id": str(conversation.legacy_id),
                "title": conversation.title,
                "persona": conversation.persona,
                "created_at": _iso(conversation.created_at),
                "updated_at": _iso(conversation.updated_at),
                "last_message_at": _iso(conversation.last_message_at),
                "closed_at": _iso(conversation.closed_at),
                "session_state": {
                    "status": conversation.status,
                    "active_topics": conversation.active_topics,
                    "open_loops": conversation.open_loops,
                    "pending_clarifications": conversation.pending_clarifications,
                    "last_intent": conversation.last_intent,
                    "turn_count": conversation.turn_count,
                },
                "messages": [
                    {
                        "id": str(message.id),
                        "sequence": message.sequence,
                        "role": message.role,
                        "content": message.content,
                        "token_count": message.token_count,
                        "metadata": message.metadata,
                        "idempotency_key": message.idempotency_key,
                        "created_at": _iso(message.created_at),
                    }
                    for message in conversation.messages.all()
                ],
                "summaries": [
                    {
                        "id": str(memory.id),
                        "memory_text": memory.memory_text,
                        "start_sequence": memory.start_sequence,
                        "end_sequence": memory.end_sequence,
                        "base_memory_id": str(memory.base_memory_id) if memory.base_memory_id else None,
                        "status": memory.status,
                        "generation_time_ms": memory.generation_time_ms,
                        "error": memory.error,
                        "created_at": _iso(memory.created_at),
                        "updated_at": _iso(memory.updated_at),
                    }
                    for memory in conversation.memories.all()
                ],
                "chunks": [
                    {
                        "id": str(chunk.id),
                        "content": chunk.content,
                        "message_range_start": chunk.message_range_start,
                        "message_range_end": chunk.message_range_end,
                        "created_at": _iso(chunk.created_at),
                    }
                    for chunk in conversation.chunks.all()
                ],
            }
            for conversation in conversations
        ],
    }
