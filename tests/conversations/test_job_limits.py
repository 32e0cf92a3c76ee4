"""A summarisation job stays inside the queue's timeout: its time budget and the system checks."""

import pytest

from conversations.checks import check_job_limits, worst_case_batch_seconds
from conversations.models import ConversationChunk
from conversations.services import message_append, summarization
from tests.factories import ConversationFactory


def _ids(settings) -> list[str]:
    return [problem.id for problem in check_job_limits(None)]


def test_the_default_limits_pass_with_offline_and_remote_providers(settings):
    assert _ids(settings) == []
    settings.LLM_PROVIDER = "openai"
    settings.EMBEDDING_PROVIDER = "openai"
    assert worst_case_batch_seconds() == pytest.approx(5 + 30 * 3 + 0.5 + 1.0 + 30 * 3)
    assert _ids(settings) == []


def test_a_retry_not_above_the_timeout_is_an_error(settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 100, "retry": 100}
    assert _ids(settings) == ["conversations.E001"]


def test_a_budget_that_cannot_fit_the_timeout_is_a_warning(settings):
    settings.LLM_PROVIDER = "openai"
    settings.LLM_TIMEOUT_SECONDS = 120
    assert _ids(settings) == ["conversations.W001"]


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
