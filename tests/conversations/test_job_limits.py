"""A summarisation job stays inside the queue's timeout: its time budget and the system checks."""

import pytest

from conversations.checks import (
    check_job_limits,
    worst_case_batch_seconds,
    worst_case_job_seconds,
    worst_case_llm_call_seconds,
)
from conversations.models import ConversationChunk
from conversations.services import message_append, summarization
from tests.factories import ConversationFactory


def _ids(settings) -> list[str]:
    return [problem.id for problem in check_job_limits(None)]


def test_the_default_limits_pass_with_offline_and_remote_providers(settings):
    assert _ids(settings) == []
    settings.LLM_PROVIDER = "openai"
    settings.EMBEDDING_PROVIDER = "openai"
    assert worst_case_batch_seconds() == pytest.approx(5 + 30 * 3 + 0.5 + 1.0 + 30 * 3 + 0.5 + 1.0)
    assert worst_case_job_seconds() == pytest.approx(45 + worst_case_batch_seconds())
    assert worst_case_job_seconds() < settings.Q_CLUSTER["timeout"]
    assert _ids(settings) == []


def test_a_retry_not_above_the_timeout_is_an_error(settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 100, "retry": 100}
    assert _ids(settings) == ["conversations.E001"]


def test_a_budget_that_cannot_fit_the_timeout_is_an_error(settings):
    settings.LLM_PROVIDER = "openai"
    settings.LLM_TIMEOUT_SECONDS = 120
    assert _ids(settings) == ["conversations.E002"]
    [problem] = check_job_limits(None)
    assert "may run 412s" in problem.msg and "Q_TIMEOUT is 240s" in problem.msg


def test_more_retries_count_in_the_worst_case(settings):
    settings.LLM_PROVIDER = "openai"
    settings.LLM_MAX_RETRIES = 5
    # 6 attempts × 30 s + 0.5+1+2+4+8 s of backoff: one model call alone.
    assert worst_case_llm_call_seconds() == pytest.approx(180 + 15.5)
    assert _ids(settings) == ["conversations.E002"]
    settings.LLM_MAX_RETRIES = 2
    settings.EMBEDDING_PROVIDER = "openai"
    settings.EMBEDDING_TIMEOUT_SECONDS = 60
    assert _ids(settings) == ["conversations.E002"]


def test_a_stuck_timeout_not_above_the_job_timeout_is_a_warning(settings):
    settings.MEMORY_PROCESSING_TIMEOUT_SECONDS = 240
    assert _ids(settings) == ["conversations.W002"]


@pytest.mark.django_db
def test_no_batch_starts_after_the_time_budget(settings):
    conversation = ConversationFactory()
    for n in range(80):
        message_append(conversation=conversation, role="user" if n % 2 == 0 else "assistant",
                       content=f"Rose planted bulb number {n} in the garden.")
    settings.SUMMARIZATION_JOB_TIME_BUDGET_SECONDS = 0
    result = summarization.conversation_catch_up(conversation=conversation)
    assert result.chunks == [] and result.more_due is True
    settings.SUMMARIZATION_JOB_TIME_BUDGET_SECONDS = 45
    result = summarization.conversation_catch_up(conversation=conversation)
    assert [(c.message_range_start, c.message_range_end) for c in result.chunks] == [
        (0, 20), (20, 40), (40, 60)
    ]
    assert ConversationChunk.objects.filter(conversation=conversation).count() == 3
