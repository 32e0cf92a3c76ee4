"""django-q2 jobs of the memory pipelines: summarise one conversation, embed its messages, and
the periodic sweep."""

import logging

from conversations import selectors
from conversations.models import Conversation
from conversations.queue import (
    enqueue_embedding,
    enqueue_summarization,
    queued_embeddings,
    queued_summarizations,
)
from conversations.services import embedding, summarization

logger = logging.getLogger(__name__)

SWEEP_SCHEDULE_NAME = "conversation memory sweep"


def summarize_conversation(conversation_id: str, respect_backoff: bool = False) -> dict:
    """The rolling summary, then archived batches; safe to run twice or concurrently. With
    `respect_backoff`, a part whose failures in a row are still backing off is skipped."""
    conversation = (
        Conversation.objects.select_related("legacy", "user").filter(pk=conversation_id).first()
    )
    if conversation is None:
        return {"conversation_id": conversation_id, "skipped": "deleted"}
    result = summarization.conversation_catch_up(
        conversation=conversation, respect_backoff=respect_backoff
    )
    if result.deleted:
        # Deleted while the job ran: it stopped, and nothing it was writing was stored.
        return {"conversation_id": conversation_id, "skipped": "deleted"}
    if result.more_due:
        # A long import is caught up over several jobs, each inside its time budget.
        enqueue_summarization(conversation_id=conversation.pk, respect_backoff=True)
    return {
        "conversation_id": conversation_id,
        "rolling_summary": str(result.rolling_summary.pk) if result.rolling_summary else None,
        "rolling_summary_status": result.rolling_summary.status if result.rolling_summary else None,
        "chunks": [[c.message_range_start, c.message_range_end] for c in result.chunks],
        "more_due": result.more_due,
        "error": result.error,
    }


def embed_conversation(conversation_id: str) -> dict:
    """Embed the conversation's messages that have no vector of the current model, at most
    EMBEDDING_JOB_MAX_MESSAGES, then queue the next job if more are left; safe to run twice.
    An embedder failure leaves them for the sweep."""
    result = embedding.conversation_embed_messages(conversation_id=conversation_id)
    if result.remaining and not result.error and result.embedded:
        enqueue_embedding(conversation_id=conversation_id)
    return {"conversation_id": conversation_id, "embedded": result.embedded,
            "remaining": result.remaining, "error": result.error}


def sweep() -> dict:
    """The scheduled safety net: recover stuck summaries, close idle conversations, and
    enqueue every conversation whose summarisation is due and whose backoff has passed, unless
    a job for it is already queued, so that no job is ever lost and none is doubled."""
    recovered = summarization.rolling_summaries_recover_stuck()
    closed = summarization.conversations_close_idle()
    queued = queued_summarizations()
    due = [str(pk) for pk in
           selectors.conversations_due_for_summarization().values_list("pk", flat=True)]
    enqueued = [conversation_id for conversation_id in due if conversation_id not in queued]
    for conversation_id in enqueued:
        enqueue_summarization(conversation_id=conversation_id, respect_backoff=True)
    if recovered or closed or due:
        logger.info("Sweep: %d stuck recovered, %d idle closed, %d enqueued, %d already queued",
                    recovered, len(closed), len(enqueued), len(due) - len(enqueued))
    return {"recovered": recovered, "closed": len(closed), "enqueued": len(enqueued),
            "already_queued": len(due) - len(enqueued)}


def embedding_sweep() -> dict:
    """The scheduled safety net of the embeddings: queue an embedding job for every
    conversation with messages never embedded (an embedder outage, a crash before the job was
    queued) unless one is queued already."""
    queued = queued_embeddings()
    pending = embedding.conversations_with_unembedded_messages()
    enqueued = [conversation_id for conversation_id in pending if conversation_id not in queued]
    for conversation_id in enqueued:
        enqueue_embedding(conversation_id=conversation_id)
    if pending:
        logger.info("Embedding sweep: %d enqueued, %d already queued", len(enqueued),
                    len(pending) - len(enqueued))
    return {"enqueued": len(enqueued), "already_queued": len(pending) - len(enqueued)}
