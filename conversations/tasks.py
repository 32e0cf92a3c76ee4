"""django-q2 jobs of the memory pipelines: summarise one conversation, and the periodic sweep."""

import logging
from uuid import UUID

from django.conf import settings
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.tasks import async_task

from conversations import selectors
from conversations.models import Conversation
from conversations.services import summarization

logger = logging.getLogger(__name__)

SUMMARIZE_TASK = "conversations.tasks.summarize_conversation"
# One name per conversation, so that the sweep can tell which conversations have a job queued.
SUMMARIZE_TASK_NAME_PREFIX = "summarize:"
SWEEP_SCHEDULE_NAME = "conversation memory sweep"


def enqueue_summarization(*, conversation_id: UUID | str, respect_backoff: bool = False) -> None:
    """Queue the summarisation check of one conversation.

    A new assistant message, a close or a staff retry try at once, even while earlier attempts
    are backing off; the sweep and a job's follow-up pass `respect_backoff` and leave alone
    what is waiting out its backoff (docs/conversation-memory.md)."""
    # `sync` is passed explicitly so that it follows the settings at call time (django-q2
    # reads its own copy once at import).
    async_task(
        SUMMARIZE_TASK, str(conversation_id), respect_backoff=respect_backoff,
        task_name=f"{SUMMARIZE_TASK_NAME_PREFIX}{conversation_id}", group="conversation-memory",
        sync=bool(settings.Q_CLUSTER.get("sync", False)),
    )


def queued_summarizations() -> set[str]:
    """Ids of the conversations with a summarisation job in django-q2's ORM queue, waiting or
    taken by a worker and not yet finished (the broker deletes the row when the job is done).

    The payloads are signed pickles, so each row is decoded for its task name; the sweep keeps
    the queue to at most one job per conversation, so this stays cheap. With a broker other
    than the ORM there is nothing to read, and a duplicate job is harmless (jobs are idempotent).
    """
    if not Conf.ORM:
        return set()
    names = (package.name() for package in OrmQ.objects.using(Conf.ORM).only("payload"))
    return {
        name.removeprefix(SUMMARIZE_TASK_NAME_PREFIX)
        for name in names
        if isinstance(name, str) and name.startswith(SUMMARIZE_TASK_NAME_PREFIX)
    }


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
    if result.more_due:
        # A long import is caught up over several jobs, each inside its time budget.
        enqueue_summarization(conversation_id=conversation.pk, respect_backoff=True)
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
    enqueue every conversation whose summarisation is due and whose backoff has passed, unless
    a job for it is already queued, so that no job is ever lost and none is doubled."""
    recovered = summarization.memories_recover_stuck()
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
