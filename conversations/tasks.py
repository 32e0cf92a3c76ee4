"""django-q2 jobs of the memory pipelines: summarise one conversation, and the periodic sweep."""

import logging
from uuid import UUID

from django.conf import settings
from django_q.tasks import async_task

from conversations import selectors
from conversations.models import Conversation
from conversations.services import summarization

logger = logging.getLogger(__name__)

SUMMARIZE_TASK = "conversations.tasks.summarize_conversation"
SWEEP_SCHEDULE_NAME = "conversation memory sweep"


def enqueue_summarization(*, conversation_id: UUID | str) -> None:
    """Queue the summarisation check of one conversation."""
    # `sync` is passed explicitly so that it follows the settings at call time (django-q2
    # reads its own copy once at import).
    async_task(
        SUMMARIZE_TASK, str(conversation_id), group="conversation-memory",
        sync=bool(settings.Q_CLUSTER.get("sync", False)),
    )


def summarize_conversation(conversation_id: str) -> dict:
    """The rolling summary, then archived batches; safe to run twice or concurrently."""
    conversation = (
        Conversation.objects.select_related("legacy", "user").filter(pk=conversation_id).first()
    )
    if conversation is None:
        return {"conversation_id": conversation_id, "skipped": "deleted"}
    result = summarization.conversation_catch_up(conversation=conversation)
    if result.more_due:
        # A long import is caught up over several jobs, each inside its time budget.
        enqueue_summarization(conversation_id=conversation.pk)
    return {
        "conversation_id": conversation_id,
        "memory": str(result.memory.pk) if result.memory else None,
        "memory_status": result.memory.status if result.memory else None,
        "chunks": [[c.message_range_start, c.message_range_end] for c in result.chunks],
        "more_due": result.more_due,
        "error": result.error,
    }


def sweep() -> dict:
    """The scheduled safety net: recover stuck summaries, close idle conversations, and
    enqueue every conversation whose summarisation is due, so no job is ever lost."""
    recovered = summarization.memories_recover_stuck()
    closed = summarization.conversations_close_idle()
    due = list(selectors.conversations_due_for_summarization().values_list("pk", flat=True))
    for conversation_id in due:
        enqueue_summarization(conversation_id=conversation_id)
    if recovered or closed or due:
        logger.info("Sweep: %d stuck recovered, %d idle closed, %d enqueued",
                    recovered, len(closed), len(due))
    return {"recovered": recovered, "closed": len(closed), "enqueued": len(due)}
