"""Pipelines 1–3: the trigger, the rolling summary (seed 002) and archived chunks with facts (seed 000)."""

from datetime import timedelta

import pytest
from django.db import DatabaseError
from django_q.models import Schedule

from conversations import selectors, services, tasks
from conversations.models import Conversation, ConversationChunk, ConversationMemory
from conversations.services import summarization
from facts.models import LegacyFact
from tests.factories import ConversationFactory
from tests.factories import import_messages as bulk_import

pytestmark = pytest.mark.django_db

USER_LINES = [
    "Mom was a nurse at St. Mary's Hospital in Dayton.",
    "She loved gardening, especially her roses.",
    "Mom was born in 1931 in Ohio.",
    "Every Sunday she baked bread for the neighbors.",
    "Her favorite song was Moon River.",
]


def say(conversation, role, content, capture):
    with capture(execute=True):
        message, _ = services.message_append(conversation=conversation, role=role, content=content)
    return message


def chat(conversation, capture, count, start=0):
    """`count` alternating messages, user first, the user's lines cycling through USER_LINES."""
    for i in range(start, start + count):
        if i % 2 == 0:
            say(conversation, "user", f"{USER_LINES[(i // 2) % len(USER_LINES)]} This was turn {i}.",
                capture)
        else:
            say(conversation, "assistant", "Thank you for sharing that. Tell me more?", capture)


def import_messages(conversation, count):
    """Messages written at once, as an import would, without the per-message trigger."""
    bulk_import(conversation, (
        ("user", f"Mom planted {i} tulips in Dayton in 1950.") if i % 2 == 0
        else ("assistant", "Lovely.")
        for i in range(count)
    ))


@pytest.fixture
def conversation(family):
    return ConversationFactory(legacy=family.legacy, user=family.owner)


@pytest.mark.parametrize(
    ("last", "window"), [(5, (0, 5)), (13, (0, 13)), (15, (2, 15)), (19, (6, 19)), (64, (52, 64))]
)
def test_summary_window_follows_the_seed_table(last, window):
    assert summarization.summary_window(last) == window


def test_rolling_summary_chain_after_each_assistant_message(conversation,
                                                             django_capture_on_commit_callbacks):
    chat(conversation, django_capture_on_commit_callbacks, 20)
    memories = list(selectors.rolling_summaries_for_conversation(conversation=conversation))
    assert [(m.start_sequence, m.end_sequence) for m in memories] == [
        (0, 5), (0, 7), (0, 9), (0, 11), (0, 13), (2, 15), (4, 17), (6, 19)
    ]
    assert {m.status for m in memories} == {"completed"}
    assert memories[0].base_memory is None
    assert all(m.base_memory_id == prev.id for prev, m in zip(memories, memories[1:], strict=False))
    assert all(m.generation_time_ms is not None for m in memories)
    last = memories[-1].memory_text
    # Content before the window (seq 0-5) is dropped; the window's user sentences are kept.
    assert "This was turn 4." not in last and "This was turn 18." in last
    assert all(int(line[1:line.index("]")]) >= 6 for line in last.splitlines())


def test_user_messages_alone_trigger_nothing(conversation, django_capture_on_commit_callbacks):
    for i in range(8):
        say(conversation, "user", f"Mom was born in Dayton in 1931, part {i}.",
            django_capture_on_commit_callbacks)
    assert not ConversationMemory.objects.exists()


def test_rolling_summary_logs_as_the_seed_lists(conversation, caplog,
                                                django_capture_on_commit_callbacks):
    caplog.set_level("DEBUG", logger="conversations.services.summarization")
    chat(conversation, django_capture_on_commit_callbacks, 16)
    text = caplog.text
    assert f"Summarized messages 2-15 for {conversation.pk} in " in text
    assert f"Sliding window: dropping seq 0-1 for {conversation.pk}" in text
    assert "status updated to completed" in text
    assert summarization.rolling_summary_update(conversation=conversation) is None
    assert f"No new messages to summarize for {conversation.pk}" in caplog.text


def test_second_claim_while_processing_is_refused(conversation, caplog):
    import_messages(conversation, 8)
    caplog.set_level("DEBUG", logger="conversations.services.summarization")
    first = summarization.rolling_summary_begin(conversation=conversation)
    assert first.status == "processing"
    assert summarization.rolling_summary_begin(conversation=conversation) is None
    assert f"Summarization already in progress for {conversation.pk}" in caplog.text
    assert ConversationMemory.objects.filter(status="processing").count() == 1


def test_archive_batches_and_facts_from_what_the_user_said(family, conversation,
                                                           django_capture_on_commit_callbacks):
    chat(conversation, django_capture_on_commit_callbacks, 30)
    assert not ConversationChunk.objects.exists()  # 30 unsummarised is not more than 30
    chat(conversation, django_capture_on_commit_callbacks, 2, start=30)
    chunks = list(selectors.archived_chunks_for_conversation(conversation=conversation))
    assert [(c.message_range_start, c.message_range_end) for c in chunks] == [(0, 20)]
    chunk = ConversationChunk.objects.get()
    assert len(chunk.embedding) == 1024
    assert (chunk.user, chunk.legacy) == (family.owner, family.legacy)
    facts = LegacyFact.objects.filter(legacy=family.legacy, user=family.owner)
    contents = {f.content for f in facts}
    assert contents == {
        "Rose was a nurse at St. Mary's Hospital in Dayton.",
        "Rose loved gardening, especially her roses.",
        "Rose was born in 1931 in Ohio.",
        "Every Sunday Rose baked bread for the neighbors.",
        "Rose's favorite song was Moon River.",
    }
    assert {f.category for f in facts} >= {"occupation", "milestone", "habit", "preference"}
    assert all(f.source_conversation_id == conversation.pk for f in facts)
    assert all((f.source_range_start, f.source_range_end) == (0, 20) for f in facts)
    assert not any("Tell me more" in c for c in contents)  # never the assistant's words


def test_a_fault_in_the_provider_stores_nothing_and_the_range_stays_due(
    conversation, settings, openai_server
):
    import_messages(conversation, 40)
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = openai_server.base_url
    settings.LLM_MAX_RETRIES = 0
    openai_server.error(500).error(500)  # the rolling summary's call, then the archive's
    result = summarization.conversation_catch_up(conversation=conversation)
    assert result.rolling_summary.status == "failed"
    assert "LLMError" in result.error
    assert not ConversationChunk.objects.exists() and not LegacyFact.objects.exists()
    assert summarization.archive_range_due(conversation=conversation) == (0, 20)
    settings.LLM_PROVIDER = "extractive"
    summarization.conversation_catch_up(conversation=conversation)
    assert list(ConversationChunk.objects.values_list("message_range_start", "message_range_end")
                ) == [(0, 20)]


@pytest.mark.parametrize(
    "reply",
    [
        "this is not JSON",
        '{"summary": "Only a summary"}',
        '{"summary": "", "facts": []}',
        '{"summary": "ok", "facts": [{"category": "hobbies", "content": "x"}]}',
        '{"summary": "ok", "facts": [{"category": "hobby"}]}',
        '["summary", "facts"]',
    ],
    ids=["not-json", "missing-facts", "empty-summary", "bad-category", "missing-content",
         "not-an-object"],
)
def test_malformed_output_stores_nothing(conversation, settings, openai_server, reply):
    import_messages(conversation, 40)
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = openai_server.base_url
    settings.LLM_MAX_RETRIES = 1
    settings.LLM_RETRY_BACKOFF_SECONDS = 0
    openai_server.chat_text(reply).chat_text(reply)
    with pytest.raises(summarization.LLMError):
        summarization.chunk_archive_range(conversation=conversation, start=0, end=20)
    assert len(openai_server.calls()) == 2  # retried once, then given up
    assert not ConversationChunk.objects.exists() and not LegacyFact.objects.exists()


def test_a_timeout_stores_nothing(conversation, settings, openai_server):
    import_messages(conversation, 40)
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = openai_server.base_url
    settings.LLM_TIMEOUT_SECONDS = 0.2
    settings.LLM_MAX_RETRIES = 0
    openai_server.delay(1.0).delay(1.0)
    result = summarization.conversation_catch_up(conversation=conversation)
    assert "timed out" in result.error.lower()
    assert not ConversationChunk.objects.exists() and not LegacyFact.objects.exists()


def test_an_embedding_failure_stores_nothing(conversation, settings, openai_server):
    import_messages(conversation, 40)
    settings.EMBEDDING_PROVIDER = "openai"
    settings.EMBEDDING_BASE_URL = openai_server.base_url
    settings.EMBEDDING_MAX_RETRIES = 0
    openai_server.error(503, endpoint="embeddings")
    result = summarization.conversation_catch_up(conversation=conversation)
    assert "EmbeddingError" in result.error
    assert not ConversationChunk.objects.exists() and not LegacyFact.objects.exists()
    assert summarization.archive_range_due(conversation=conversation) == (0, 20)


def test_a_database_error_mid_job_rolls_back_chunk_and_facts(conversation, monkeypatch):
    import_messages(conversation, 40)

    def broken_save(self, *args, **kwargs):
        raise DatabaseError("disk full while saving a fact")

    monkeypatch.setattr(LegacyFact, "save", broken_save)
    result = summarization.conversation_catch_up(conversation=conversation)
    assert "disk full" in result.error
    assert not ConversationChunk.objects.exists()
    monkeypatch.undo()
    summarization.conversation_catch_up(conversation=conversation)
    assert ConversationChunk.objects.count() == 1
    assert LegacyFact.objects.filter(source_range_start=0).exists()


def test_rerunning_an_archived_range_never_duplicates(conversation):
    import_messages(conversation, 40)
    first = summarization.chunk_archive_range(conversation=conversation, start=0, end=20)
    facts = LegacyFact.objects.count()
    assert first is not None and facts > 0
    assert summarization.chunk_archive_range(conversation=conversation, start=0, end=20) is None
    assert ConversationChunk.objects.count() == 1
    assert LegacyFact.objects.count() == facts


def test_a_failed_rolling_summary_is_marked_and_redone(conversation, settings, openai_server):
    import_messages(conversation, 8)
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = openai_server.base_url
    settings.LLM_MAX_RETRIES = 0
    openai_server.error(500)
    failed = summarization.rolling_summary_update(conversation=conversation)
    assert failed.status == "failed" and "LLMError" in failed.error
    assert failed.generation_time_ms is not None and failed.memory_text == ""
    openai_server.chat_json({"summary": "Rose was a nurse."})
    redone = summarization.rolling_summary_update(conversation=conversation)
    assert (redone.status, redone.memory_text, redone.start_sequence, redone.end_sequence) == (
        "completed", "Rose was a nurse.", 0, 7)
    assert not ConversationMemory.objects.filter(status="processing").exists()


def test_a_long_import_is_caught_up_batch_by_batch(conversation, settings):
    settings.SUMMARIZATION_MAX_BATCHES_PER_JOB = 25
    import_messages(conversation, 2000)
    result = tasks.summarize_conversation(str(conversation.pk))
    # Each job archives 25 batches and enqueues the next (run at once in sync mode).
    assert result["chunks"][0] == [0, 20] and result["more_due"] is True
    ranges = list(ConversationChunk.objects.order_by("message_range_start").values_list(
        "message_range_start", "message_range_end"))
    assert ranges == [(s, s + 20) for s in range(0, 1980, 20)]
    assert summarization.archive_range_due(conversation=conversation) is None


def test_close_archives_the_tail_and_writes_the_final_summary(conversation,
                                                             django_capture_on_commit_callbacks):
    chat(conversation, django_capture_on_commit_callbacks, 4)
    with django_capture_on_commit_callbacks(execute=True):
        services.conversation_close(conversation=conversation)
    conversation.refresh_from_db()
    assert conversation.status == "shutdown_clean" and conversation.closed_at is not None
    assert list(ConversationChunk.objects.values_list("message_range_start", "message_range_end")
                ) == [(0, 4)]
    memory = selectors.latest_completed_rolling_summary(conversation=conversation)
    assert (memory.start_sequence, memory.end_sequence) == (0, 3)


def test_sweep_is_scheduled():
    schedule = Schedule.objects.get(name=tasks.SWEEP_SCHEDULE_NAME)
    assert (schedule.func, schedule.schedule_type, schedule.minutes, schedule.repeats) == (
        "conversations.tasks.sweep", Schedule.MINUTES, 1, -1)


def test_sweep_recovers_stuck_rows_and_redoes_them(conversation):
    import_messages(conversation, 8)
    stuck = summarization.rolling_summary_begin(conversation=conversation)
    ConversationMemory.objects.filter(pk=stuck.pk).update(
        created_at=stuck.created_at - timedelta(minutes=6))
    assert tasks.sweep() == {"recovered": 1, "closed": 0, "enqueued": 1, "already_queued": 0}
    stuck.refresh_from_db()
    assert (stuck.status, stuck.error) == ("failed", summarization.STUCK_ERROR)
    assert selectors.latest_completed_rolling_summary(conversation=conversation).end_sequence == 7


def test_sweep_leaves_a_recent_processing_row_alone(conversation):
    import_messages(conversation, 8)
    running = summarization.rolling_summary_begin(conversation=conversation)
    assert tasks.sweep()["recovered"] == 0
    running.refresh_from_db()
    assert running.status == "processing"


def test_sweep_finds_conversations_whose_job_was_lost(conversation):
    # Messages committed but the enqueue never ran (a crash between commit and on_commit).
    import_messages(conversation, 45)
    assert tasks.sweep()["enqueued"] == 1
    assert ConversationChunk.objects.count() == 1
    assert selectors.latest_completed_rolling_summary(conversation=conversation).end_sequence == 44
    assert tasks.sweep()["enqueued"] == 0


def test_sweep_closes_idle_conversations_and_archives_their_tail(conversation, settings):
    import_messages(conversation, 6)
    Conversation.objects.filter(pk=conversation.pk).update(
        last_message_at=conversation.created_at - timedelta(hours=2))
    assert tasks.sweep()["closed"] == 1
    conversation.refresh_from_db()
    assert conversation.status == "shutdown_clean"
    assert list(ConversationChunk.objects.values_list("message_range_start", "message_range_end")
                ) == [(0, 6)]
