"""The sweep backs off per conversation while a provider fails, and never queues one conversation twice."""

from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone
from django_q.models import OrmQ

from conversations import queue, selectors, services, tasks
from conversations.models import Conversation, ConversationChunk, ConversationMemory
from tests.factories import ConversationFactory, ConversationMemoryFactory, import_messages
from tests.support.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(family):
    conversation = ConversationFactory(legacy=family.legacy, user=family.owner)
    # 45 messages written at once (an import): the rolling summary and one archive batch
    # (0-20) are due, and nothing has enqueued a job.
    import_messages(conversation, (
        ("user", f"Mom planted {i} tulips in Dayton in 1950.") if i % 2 == 0
        else ("assistant", "Lovely.")
        for i in range(45)
    ))
    return conversation


@pytest.fixture
def outage(settings):
    """Every provider call answers 500 until the test switches providers back."""
    server = FakeOpenAIServer(strict=True).start()
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = server.base_url
    settings.LLM_MAX_RETRIES = 0
    yield server
    server.stop()


def minutes_pass(minutes: int) -> None:
    """Move the clock on: every timestamp the backoff reads moves back by `minutes`."""
    delta = timedelta(minutes=minutes)
    ConversationMemory.objects.update(created_at=F("created_at") - delta,
                                      updated_at=F("updated_at") - delta)
    Conversation.objects.filter(archive_failed_at__isnull=False).update(
        archive_failed_at=F("archive_failed_at") - delta)


def sweep_every_minute(minutes: int) -> list[int]:
    """The minutes at which the sweep enqueued a job."""
    enqueued_at = []
    for minute in range(minutes):
        if tasks.sweep()["enqueued"]:
            enqueued_at.append(minute)
        minutes_pass(1)
    return enqueued_at


def test_an_outage_costs_a_bounded_number_of_attempts_then_the_conversation_catches_up(
    conversation, outage, settings
):
    # Six hours of sweeps, one a minute. Without backoff: 360 jobs, 360 failed rows and 720
    # provider calls. With 60 s doubling to at most 3600 s: attempts at these minutes.
    assert sweep_every_minute(360) == [0, 1, 3, 7, 15, 31, 63, 123, 183, 243, 303]
    assert ConversationMemory.objects.filter(status="failed").count() == 11
    assert not ConversationMemory.objects.exclude(status="failed").exists()
    assert len(outage.calls("chat")) == 22  # the rolling summary and the archive batch, each time
    assert not ConversationChunk.objects.exists()
    conversation.refresh_from_db()
    assert conversation.archive_failures == 11
    assert conversation.archive_error.startswith("LLMError: ")

    settings.LLM_PROVIDER = "extractive"  # the provider is back
    # The next attempt is due an hour after the last one (minute 363).
    assert sweep_every_minute(60) == [3]
    assert selectors.latest_completed_rolling_summary(conversation=conversation).end_sequence == 44
    assert list(ConversationChunk.objects.values_list("message_range_start", "message_range_end")
                ) == [(0, 20)]
    conversation.refresh_from_db()
    assert (conversation.archive_failures, conversation.archive_failed_at,
            conversation.archive_error) == (0, None, "")
    assert ConversationMemory.objects.filter(status="failed").count() == 11
    assert len(outage.calls("chat")) == 22
    assert tasks.sweep()["enqueued"] == 0


def test_archive_failures_back_off_on_their_own(conversation, settings):
    # The summaries work; only the embeddings fail, so only the archive backs off.
    server = FakeOpenAIServer(strict=True).start()
    try:
        settings.EMBEDDING_PROVIDER = "openai"
        settings.EMBEDDING_BASE_URL = server.base_url
        settings.EMBEDDING_MAX_RETRIES = 0
        assert sweep_every_minute(60) == [0, 1, 3, 7, 15, 31]
        assert len(server.calls("embeddings")) == 6
    finally:
        server.stop()
    assert list(ConversationMemory.objects.values_list("status", "end_sequence")) == [
        ("completed", 44)]
    conversation.refresh_from_db()
    assert conversation.archive_failures == 6
    assert conversation.archive_error.startswith("EmbeddingError: ")
    assert not ConversationChunk.objects.exists()


def test_a_new_assistant_message_tries_once_despite_the_backoff(
    conversation, outage, django_capture_on_commit_callbacks
):
    assert tasks.sweep()["enqueued"] == 1
    assert tasks.sweep()["enqueued"] == 0  # backing off for a minute
    assert len(outage.calls("chat")) == 2
    with django_capture_on_commit_callbacks(execute=True):
        services.message_append(conversation=conversation, role="assistant", content="Go on.")
    # The message's own job tried the summary and the archive at once, and failed again.
    assert len(outage.calls("chat")) == 4
    assert ConversationMemory.objects.filter(status="failed").count() == 2
    conversation.refresh_from_db()
    assert conversation.archive_failures == 2
    # Two failures in a row: the sweep now waits two minutes.
    minutes_pass(1)
    assert tasks.sweep()["enqueued"] == 0
    minutes_pass(1)
    assert tasks.sweep()["enqueued"] == 1
    assert len(outage.calls("chat")) == 6


def test_a_queued_job_is_not_queued_again(conversation, settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": False}
    assert tasks.sweep() == {"recovered": 0, "closed": 0, "enqueued": 1, "already_queued": 0}
    for _ in range(3):
        assert tasks.sweep() == {"recovered": 0, "closed": 0, "enqueued": 0, "already_queued": 1}
    package = OrmQ.objects.get()
    assert package.name() == f"summarize:{conversation.pk}"
    assert (package.func(), package.args(), package.kwargs()) == (
        queue.SUMMARIZE_TASK, (str(conversation.pk),), {"respect_backoff": True})
    assert queue.queued_summarizations() == {str(conversation.pk)}

    # A worker takes the job (the row stays, locked, until the job is done) and runs it.
    OrmQ.objects.filter(pk=package.pk).update(lock=timezone.now() + timedelta(minutes=4))
    assert tasks.sweep()["enqueued"] == 0
    tasks.summarize_conversation(*package.args(), **package.kwargs())
    package.delete()
    assert queue.queued_summarizations() == set()
    assert tasks.sweep() == {"recovered": 0, "closed": 0, "enqueued": 0, "already_queued": 0}
    assert selectors.latest_completed_rolling_summary(conversation=conversation).end_sequence == 44
    assert ConversationChunk.objects.count() == 1


def test_a_job_of_the_sweep_skips_what_is_backing_off(
    conversation, outage, django_capture_on_commit_callbacks
):
    tasks.summarize_conversation(str(conversation.pk))
    assert len(outage.calls("chat")) == 2
    # A job queued by the sweep before the failure, run now: it calls nothing.
    result = tasks.summarize_conversation(str(conversation.pk), respect_backoff=True)
    assert (result["rolling_summary"], result["chunks"], result["error"]) == (None, [], "")
    assert len(outage.calls("chat")) == 2
    # A staff retry, like a new message, tries at once.
    with django_capture_on_commit_callbacks(execute=True):
        assert services.rolling_summary_retry(memory=ConversationMemory.objects.get()) is True
    assert len(outage.calls("chat")) == 4


@pytest.mark.parametrize(
    ("failures", "wait_seconds"),
    [(1, 60), (2, 120), (3, 240), (6, 1920), (7, 3600), (8, 3600), (5000, 3600)],
)
def test_the_backoff_doubles_up_to_its_cap(conversation, failures, wait_seconds):
    failed_at = timezone.now() - timedelta(days=1)
    Conversation.objects.filter(pk=conversation.pk).update(
        archive_failures=failures, archive_failed_at=failed_at)
    ConversationMemory.objects.bulk_create(
        ConversationMemory(conversation=conversation, start_sequence=31, end_sequence=44,
                           status="failed")
        for _ in range(min(failures, 50))
    )
    ConversationMemory.objects.update(created_at=failed_at, updated_at=failed_at)
    retry = selectors.rolling_summary_retry_times(conversation=conversation)
    assert retry.archive == failed_at + timedelta(seconds=wait_seconds)
    summary_failures = min(failures, 50)
    assert retry.summary == failed_at + timedelta(
        seconds=min(60 * 2 ** (summary_failures - 1), 3600))


def test_a_completed_summary_ends_the_summary_backoff(conversation, settings):
    ConversationMemoryFactory(conversation=conversation, start_sequence=25,
                              end_sequence=38, status="failed")
    assert selectors.rolling_summary_retry_times(conversation=conversation).summary is not None
    ConversationMemoryFactory(conversation=conversation, start_sequence=25,
                              end_sequence=38, status="completed", memory_text="Rose.")
    assert selectors.rolling_summary_retry_times(conversation=conversation) == (None, None)
