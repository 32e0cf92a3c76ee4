"""What the context packet costs: each text is counted once, the messages are read once and
without their retrieval columns, and what the counts and the last reply say is what a fresh
count and a fresh read say."""

from collections import Counter
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent_memory.services import memory_create
from conversations import context
from conversations.agent_serializers import context_response
from conversations.context import build_context, total_tokens
from conversations.services import message_append
from memory_site.core.ai import count_tokens
from tests.factories import ConversationFactory, ConversationMemoryFactory, LegacyFactFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 14, 9, 26, 53, tzinfo=UTC)


@pytest.fixture
def talked(family):
    """Twelve exchanges, the last reply with a tool call, a summary of the first eight
    messages, facts, a memory and the user's latest message."""
    conversation = ConversationFactory(
        user=family.owner, legacy=family.legacy, persona="Speak gently, like an old friend."
    )
    memory_create(user=family.owner, content="Alec is the user's brother", category="person",
                  subject="Alec")
    for n in range(6):
        LegacyFactFactory(legacy=family.legacy, user=family.owner,
                          content=f"Rose kept bees in the orchard, hive {n}.")
    for i in range(12):
        message_append(conversation=conversation, role="user", content=f"Story {i} about Rose.")
        message_append(conversation=conversation, role="assistant", content=f"Reply {i}.",
                       metadata={"tool_calls": [{"id": "c1"}]} if i == 11 else None)
    ConversationMemoryFactory(conversation=conversation, memory_text="They talked about bees.",
                              start_sequence=0, end_sequence=7, status="completed")
    message_append(conversation=conversation, role="user",
                   content="Tell me again about the orchard and the hives, please.")
    conversation.refresh_from_db()
    return conversation


@pytest.fixture
def counted(monkeypatch):
    """Every text the packet hands to the tokenizer."""
    texts: Counter[str] = Counter()

    def counting(text: str) -> int:
        texts[text] += 1
        return count_tokens(text)

    monkeypatch.setattr(context, "count_tokens", counting)
    return texts


def test_within_budget_each_text_is_counted_once(talked, counted):
    packet = build_context(conversation=talked, now=NOW)
    body = context_response(packet)

    assert packet.cuts == []
    assert max(counted.values()) == 1
    # The system prompt once, each replayed message once, each block once: nothing else.
    assert set(counted) == {
        packet.system_prompt, *(m.content for m in packet.messages),
        *(s.render() for s in packet.sections),
    }
    assert body["token_counts"]["total"] == total_tokens(packet.chat_messages())
    assert body["token_counts"]["messages"] == total_tokens(packet.chat_messages()[1:])


@pytest.mark.parametrize("room", [0, 40, 120, 400])
def test_the_counts_after_cuts_are_fresh_counts(talked, settings, room):
    """Cut down to the floor and a little above (the persona, the latest message truncated):
    the counts the cuts were decided on are the counts of what is sent."""
    full = build_context(conversation=talked, now=NOW)
    floor = (count_tokens(full.section("persona").head)
             + count_tokens(full.section("datetime").render()) + 20)
    settings.CONTEXT_TOKEN_BUDGET = floor + room

    packet = build_context(conversation=talked, now=NOW)
    counts = packet.token_counts()

    assert packet.cuts
    assert counts["total"] == total_tokens(packet.chat_messages()) <= floor + room
    assert counts["messages"] == total_tokens(packet.chat_messages()[1:])
    for section in packet.sections:
        assert counts[section.name] == count_tokens(section.render()), section.name


def test_the_messages_are_read_once_without_their_vectors(talked, settings):
    settings.CONTEXT_RETRIEVAL_TOP_K = 0  # the search reads messages of its own

    with CaptureQueriesContext(connection) as queries:
        body = context_response(build_context(conversation=talked, now=NOW))

    reads = [q["sql"] for q in queries.captured_queries
             if q["sql"].lstrip().startswith("SELECT")
             and 'FROM "conversations_message"' in q["sql"]]
    assert len(reads) == 1, reads
    assert '"conversations_message"."embedding"' not in reads[0]
    assert '"conversations_message"."search_vector"' not in reads[0]
    # The summary ends at 7: the gap from 8 on is replayed; the last reply is read from the
    # raw turns, not from another query.
    assert [m["sequence"] for m in body["parts"]["messages"]] == list(range(8, 25))
    assert body["parts"]["raw_from_sequence"] == 20
    assert body["last_response_type"] == "tool_calls"


def test_the_last_reply_before_the_raw_turns_is_still_found(talked, settings):
    settings.CONTEXT_RAW_TURNS = 1  # the raw turn is the latest user message alone

    body = context_response(build_context(conversation=talked, now=NOW))

    assert body["parts"]["raw_from_sequence"] == 24
    assert body["last_response_type"] == "tool_calls"


def test_without_messages_or_summary_nothing_is_read_twice(family, settings):
    settings.CONTEXT_RECENT_MESSAGES = 3
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    for i in range(4):
        message_append(conversation=conversation, role="assistant", content=f"Hello {i}.")

    with CaptureQueriesContext(connection) as queries:
        packet = build_context(conversation=conversation, now=NOW)

    message_reads = [q["sql"] for q in queries.captured_queries
                     if q["sql"].lstrip().startswith("SELECT")
                     and 'FROM "conversations_message"' in q["sql"]]
    assert len(message_reads) == 1, message_reads
    # No user message: no raw turns; the last three messages are replayed.
    assert packet.raw_turns == []
    assert [m.sequence for m in packet.messages] == [1, 2, 3]
    assert context_response(packet)["last_response_type"] == "text"
