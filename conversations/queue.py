"""Putting jobs on django-q2's queue: by dotted name, so that services enqueue without importing
the jobs (which import the services)."""

from uuid import UUID

from django.conf import settings
from django_q.tasks import async_task

from memory_site.core.jobs import queued_ids

# The memory jobs' successes are not saved as django-q2 result rows: nothing reads them (a
# job's effects are the rows it writes; an archive failure is in the conversation's
# archive_error and the logs), and with Q_SAVE_LIMIT each save reads and locks every saved
# success to prune one (docs/benchmarks.md, "Scale"). A job that raises is still saved.
JOB_RESULTS_SAVED = False

SUMMARIZE_TASK = "conversations.tasks.summarize_conversation"
# One name per conversation, so that the sweep can tell which conversations have a job queued.
SUMMARIZE_TASK_NAME_PREFIX = "summarize:"


def enqueue_summarization(*, conversation_id: UUID | str, respect_backoff: bool = False) -> None:
    """Queue the summarisation check of one conversation.

    A new assistant message, a close or a staff retry try at once, even while earlier attempts
    are backing off; the sweep and a job's follow-up pass `respect_backoff` and leave alone
    what is waiting out its backoff (docs/conversation-memory.md)."""
    # `sync` is passed explicitly so that it follows the settings at call time (django-q2
    # reads its own copy once at import). `save`: see JOB_RESULTS_SAVED.
    async_task(
        SUMMARIZE_TASK, str(conversation_id), respect_backoff=respect_backoff,
        task_name=f"{SUMMARIZE_TASK_NAME_PREFIX}{conversation_id}", group="conversation-memory",
        sync=bool(settings.Q_CLUSTER.get("sync", False)), save=JOB_RESULTS_SAVED,
    )


EMBED_TASK = "conversations.tasks.embed_conversation"
EMBED_TASK_NAME_PREFIX = "embed:"


def enqueue_embedding(*, conversation_id: UUID | str) -> None:
    """Queue the embedding of the conversation's messages that have no vector yet: after an
    append (never on the request path), an import, or by the sweep."""
    async_task(
        EMBED_TASK, str(conversation_id),
        task_name=f"{EMBED_TASK_NAME_PREFIX}{conversation_id}", group="conversation-memory",
        sync=bool(settings.Q_CLUSTER.get("sync", False)), save=JOB_RESULTS_SAVED,
    )


def enqueue_summarization_and_embedding(*, conversation_id: UUID | str) -> None:
    """Both jobs of newly written messages (an import, a batch), from one on-commit callback."""
    enqueue_summarization(conversation_id=conversation_id)
    enqueue_embedding(conversation_id=conversation_id)


def queued_embeddings() -> set[str]:
    """Ids of the conversations with an embedding job in the queue (as queued_summarizations)."""
    return queued_ids(EMBED_TASK_NAME_PREFIX)


def queued_summarizations() -> set[str]:
    """Ids of the conversations with a summarisation job in django-q2's queue.

    On the ORM broker: waiting or taken by a worker and not yet finished (the broker deletes the
    row when the job is done). On Redis: waiting only, as a worker pops a job off the list when
    it takes it, so a job running right now is not seen and the sweep may queue a second one,
    which is harmless (jobs are idempotent, and the archive lock makes the second skip).

    The payloads are signed pickles, so each one is decoded for its task name; the sweep keeps
    the queue to at most one job per conversation, so this stays cheap.
    """
    return queued_ids(SUMMARIZE_TASK_NAME_PREFIX)
