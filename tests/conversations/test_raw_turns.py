"""The last CONTEXT_RAW_TURNS turns reach every context verbatim, both roles, whatever the state
of the rolling summary (seed 004: "keep last 3 raw turns always"), and are cut last."""

from datetime import UTC, datetime

import pytest

from conversations.checkpoint import checkpoint_snapshot
from conversations.context import build_context
from conversations.services import message_append
from memory_site.core.ai import count_tokens
from tests.factories import ConversationFactory, ConversationMemoryFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 14, 9, 26, 53, tzinfo=UTC)
QUESTION = "Would you like me to remember that her favourite colour was blue?"


def _exchanges(conversation, count: int) -> None:
    for i in range(count):
        message_append(conversation=conversation, role="user", content=f"Story {i} about Rose.")
        message_append(conversation=conversation, role="assistant", content=f"Reply {i}.")


@pytest.fixture
def answered(family):
    """Six exchanges, a completed summary covering ALL of them (a fast worker), the agent's
    question, and the user's "Yes please."."""
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    _exchanges(conversation, 6)  # sequences 0-11
    message_append(conversation=conversation, role="user", content="Her favourite colour was blue.")
    message_append(conversation=conversation, role="assistant", content=QUESTION)  # 13
    ConversationMemoryFactory(
        conversation=conversation, memory_text="They talked about Rose.", start_sequence=0,
        end_sequence=13, status="completed",
    )
    message_append(conversation=conversation, role="user", content="Yes please.")  # 14
    return conversation


def test_the_agents_question_is_replayed_though_the_summary_covers_it(answered):
    packet = build_context(conversation=answered, now=NOW)

    chat = packet.chat_messages()
    assert chat[1:] == [
        {"role": "user", "content": "Story 5 about Rose."},
        {"role": "assistant", "content": "Reply 5."},
        {"role": "user", "content": "Her favourite colour was blue."},
        {"role": "assistant", "content": QUESTION},
        {"role": "user", "content": "Yes please."},
    ]
    assert packet.raw_from_sequence == 10
    assert "They talked about Rose." in packet.system_prompt  # the summary is still there


@pytest.mark.parametrize("turns", [1, 3, 5])
def test_the_raw_turns_are_the_checkpoints_last_turns(answered, settings, turns):
    settings.CONTEXT_RAW_TURNS = turns
    packet = build_context(conversation=answered, now=NOW)
    snapshot = checkpoint_snapshot(conversation=answered)
    assert len(snapshot.last_turns) == turns
    assert [m.sequence for m in packet.messages] == [
        m.sequence for turn in snapshot.last_turns for m in turn
    ]


def test_the_gap_after_the_summary_comes_before_the_raw_turns(family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    _exchanges(conversation, 10)  # 0-19
    ConversationMemoryFactory(
        conversation=conversation, memory_text="Early days.", start_sequence=0, end_sequence=5,
        status="completed",
    )

    packet = build_context(conversation=conversation, now=NOW)

    assert [m.sequence for m in packet.messages] == list(range(6, 20))
    assert packet.raw_from_sequence == 14


def test_without_a_summary_short_recent_window_still_holds_the_raw_turns(family, settings):
    settings.CONTEXT_RECENT_MESSAGES = 2
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    _exchanges(conversation, 5)  # 0-9

    packet = build_context(conversation=conversation, now=NOW)

    assert [m.sequence for m in packet.messages] == [4, 5, 6, 7, 8, 9]


def test_tool_messages_of_the_raw_turns_are_not_replayed(family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    message_append(conversation=conversation, role="user", content="Remember she loved blue.")
    message_append(conversation=conversation, role="tool", content='{"ok": true}')
    message_append(conversation=conversation, role="assistant", content="I'll remember that.")

    packet = build_context(conversation=conversation, now=NOW)

    assert [m["role"] for m in packet.chat_messages()[1:]] == ["user", "assistant"]


def test_the_raw_turns_are_cut_after_the_older_gap_and_the_summary(family, settings):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    _exchanges(conversation, 10)  # 0-19; raw turns from 14
    ConversationMemoryFactory(
        conversation=conversation, memory_text="Early days. " * 40, start_sequence=0,
        end_sequence=5, status="completed",
    )
    full = build_context(conversation=conversation, now=NOW)
    summary_tokens = count_tokens(full.section("rolling_summary").render())

    # Room for everything but the summary and two older messages: the older messages go
    # first, then the summary; every raw message stays.
    settings.CONTEXT_TOKEN_BUDGET = full.token_counts()["total"] - summary_tokens
    packet = build_context(conversation=conversation, now=NOW)
    parts = [cut["part"] for cut in packet.cuts]
    assert parts[: 8] == ["messages"] * 8
    assert "rolling_summary" in parts
    assert "raw_turns" not in parts
    assert [m.sequence for m in packet.messages] == list(range(14, 20))

    # Squeezed to the floor, the raw turns go last, oldest first; the latest message stays.
    settings.CONTEXT_TOKEN_BUDGET = (count_tokens(packet.section("persona").render())
                                     + count_tokens(packet.section("datetime").render()) + 30)
    packet = build_context(conversation=conversation, now=NOW)
    parts = [cut["part"] for cut in packet.cuts]
    first_raw = parts.index("raw_turns")
    assert "rolling_summary" in parts[:first_raw] and "memory" not in parts[first_raw:]
    raw_cut = [cut["item"]["sequence"] for cut in packet.cuts if cut["part"] == "raw_turns"]
    assert raw_cut == sorted(raw_cut) and raw_cut[0] == 14
    assert packet.messages[-1].sequence == 19
