"""A job that finishes after the sweep gave it up does not overwrite what the sweep wrote
(compare-and-set on `processing`), and every advisory lock has a namespace of its own."""

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from conversations.models import ConversationMemory
from conversations.services import summarization
from memory_site.core.locks import LockNamespace
from tests.factories import ConversationFactory, import_messages

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_a_late_summary_does_not_overwrite_a_row_the_sweep_failed(settings):
    conversation = ConversationFactory()
    import_messages(conversation, (("user" if n % 2 == 0 else "assistant",
                                    f"Mom sang in the choir, verse {n}.") for n in range(8)))
    memory = summarization.rolling_summary_begin(conversation=conversation)
    # Its worker looked dead: the sweep marks the row failed once it is old enough.
    ConversationMemory.objects.filter(pk=memory.pk).update(
        created_at=timezone.now() - timedelta(seconds=settings.MEMORY_PROCESSING_TIMEOUT_SECONDS + 1))
    assert summarization.rolling_summaries_recover_stuck() == 1

    late = summarization.rolling_summary_generate(memory=memory)

    row = ConversationMemory.objects.get(pk=memory.pk)
    assert (row.status, row.memory_text, row.error) == ("failed", "", summarization.STUCK_ERROR)
    assert (late.status, late.error) == ("failed", summarization.STUCK_ERROR)
    # The next trigger redoes the window.
    again = summarization.rolling_summary_update(conversation=conversation)
    assert again.status == "completed" and again.pk != memory.pk


@pytest.mark.django_db
def test_a_retry_by_staff_does_not_fail_a_row_that_completed_meanwhile(settings):
    conversation = ConversationFactory()
    import_messages(conversation, (("user", f"Mom kept bees, hive {n}.") for n in range(8)))
    memory = summarization.rolling_summary_begin(conversation=conversation)
    stale = ConversationMemory.objects.get(pk=memory.pk)
    stale.created_at = timezone.now() - timedelta(hours=1)
    summarization.rolling_summary_generate(memory=memory)  # completes
    summarization.rolling_summary_retry(memory=stale)  # staff saw it processing, an hour old
    assert ConversationMemory.objects.get(pk=memory.pk).status == "completed"


def test_lock_namespaces_are_distinct_and_every_advisory_lock_uses_one():
    assert len({n.value for n in LockNamespace}) == len(LockNamespace)
    for path in [*ROOT.glob("*/**/*.py")]:
        if ".venv" in path.parts or "tests" in path.parts:
            continue
        for call in re.findall(r"pg_(?:try_)?advisory_(?:xact_)?(?:un)?lock\(%s, [^\n]*\n?[^\n]*",
                               path.read_text()):
            assert "LockNamespace." in call, f"{path}: {call}"
