"""What the context packet costs: each text is counted once, the messages are read once and
without their retrieval columns, and what the counts and the last reply say is what a fresh
count and a fresh read say."""

from collections import Counter
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from agent_memory.selectors import active_memories_for_user, places_for_user
from agent_memory.services import memory_create, memory_delete, place_add
from conversations import context
from conversations.agent_serializers import ContextResponseSerializer, context_response
from conversations.context import build_context, total_tokens
from conversations.retrieval import search_conversations
from conversations.selectors import context_rows
from conversations.services import message_append
from facts.selectors import facts_visible_to
from facts.services import membership_leave
from memory_site.core.ai import count_tokens
from tests.factories import (
    ConversationFactory,
    ConversationMemoryFactory,
    LegacyFactFactory,
    MembershipFactory,
)
from tests.support.chunks import chunk_for

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


@pytest.fixture
def everything(family, talked):
    """`talked` with every part of the body: a memory without a subject, places (one
    mentioned), a fellow member's shared fact and a private one, an earlier conversation
    whose words the user corrected twice (a chain), a summary being written and session
    state."""
    earlier = ConversationFactory(user=family.owner, legacy=family.legacy)
    chunk_for(earlier, 0, 20, "Rose married Tom in 1961 by the orchard hives.")
    memory_create(user=family.owner, content="Prefers short answers", category="preference")
    place_add(user=family.owner, place_id="orchard", name="The orchard", notes="Rose's bees",
              conversation=earlier)
    place_add(user=family.owner, place_id="lake", name="The lake")
    LegacyFactFactory(legacy=family.legacy, user=family.member, visibility="shared",
                      content="Rose was a nurse.")
    LegacyFactFactory(legacy=family.legacy, user=family.member, content="Member's own note.")
    now = LegacyFactFactory(legacy=family.legacy, user=family.owner,
                            content="Rose married Tom in 1963.")
    then = LegacyFactFactory(legacy=family.legacy, user=family.owner, superseded_by=now,
                             superseded_at=timezone.now(), content="Rose married Tom in 1962.")
    LegacyFactFactory(legacy=family.legacy, user=family.owner, superseded_by=then,
                      superseded_at=timezone.now(), content="Rose married Tom in 1961.",
                      source_conversation=earlier, source_range_start=0, source_range_end=20)
    ConversationMemoryFactory(conversation=talked, memory_text="", start_sequence=0,
                              end_sequence=23, status="processing")
    talked.active_topics = ["bees"]
    talked.open_loops = ["the <b>hive</b> keys"]
    talked.pending_clarifications = ["Which orchard?"]
    talked.save()
    return talked


QUERY = "When did Rose marry Tom at the orchard?"


@pytest.mark.parametrize("budget", [None, 900, 700])
def test_the_body_is_the_serializers_field_for_field(everything, settings, budget):
    """context_response builds the body without the serializer's machinery; the serializer
    stays its schema, and both give the same bytes (cut or not)."""
    if budget is not None:
        settings.CONTEXT_TOKEN_BUDGET = budget
    packet = build_context(conversation=everything, query=QUERY, now=NOW)
    if budget is None:
        assert packet.retrieved and packet.facts and packet.memories and packet.places
    else:
        assert packet.cuts

    body = JSONRenderer().render(context_response(packet))
    expected = ContextResponseSerializer(
        packet, context={"user_id": packet.conversation.user_id}
    ).data

    assert body == JSONRenderer().render(expected)


def test_the_body_of_an_empty_conversation_is_the_serializers(family):
    packet = build_context(conversation=ConversationFactory(user=family.owner,
                                                            legacy=family.legacy), now=NOW)

    assert JSONRenderer().render(context_response(packet)) == JSONRenderer().render(
        ContextResponseSerializer(packet, context={"user_id": family.owner.pk}).data
    )


def test_a_correction_chain_is_noted_at_its_end(everything):
    packet = build_context(conversation=everything, query=QUERY, now=NOW)

    [line] = [line.text for line in packet.section("retrieved").lines if "1961" in line.text]
    assert line.endswith("(corrected later: Rose married Tom in 1963.)")
    assert [f.content for f in packet.facts if "married" in f.content] == [
        "Rose married Tom in 1963."
    ]


def test_the_packet_reads_everything_but_its_search_in_two_queries(everything, settings):
    """One statement for the summary, the messages, the memories, the places, the facts and
    the running summary jobs; one for the corrections of the retrieved conversations; the
    search's own queries; nothing else, however many rows each part has."""
    user, legacy = everything.user, everything.legacy
    with CaptureQueriesContext(connection) as search:
        search_conversations(user=user, legacy=legacy, query=QUERY,
                             k=settings.CONTEXT_RETRIEVAL_TOP_K,
                             exclude_conversation_ids=[everything.pk])

    with CaptureQueriesContext(connection) as queries:
        body = context_response(build_context(conversation=everything, query=QUERY, now=NOW))

    assert body["parts"]["retrieved"] and body["active_job_refs"]
    assert len(queries) == 2 + len(search)

    settings.CONTEXT_RETRIEVAL_TOP_K = 0  # no search, no corrections to look up
    with CaptureQueriesContext(connection) as queries:
        body = context_response(build_context(conversation=everything, query=QUERY, now=NOW))

    assert body["parts"]["retrieved"] == [] and len(body["parts"]["facts"]) == 8
    assert len(queries) == 1, [q["sql"] for q in queries.captured_queries]


def test_the_rows_are_what_the_apps_selectors_read(family, everything):
    """context_rows' memories, places and facts are active_memories_for_user, places_for_user
    and facts_visible_to, for the user, a fellow member and a stranger to the legacy."""
    for user in (family.owner, family.member, family.stranger):
        conversation = everything if user == family.owner else ConversationFactory(
            user=user, legacy=family.legacy)
        rows = context_rows(conversation=conversation, recent=20, turns=3)

        assert [(f.pk, f.content, f.visibility, f.user.username) for f in rows.facts] == [
            (f.pk, f.content, f.visibility, f.user.username)
            for f in facts_visible_to(user, family.legacy)
        ]
        assert [(m.pk, m.category, m.subject, m.content) for m in rows.memories] == [
            (m.pk, m.category, m.subject, m.content) for m in active_memories_for_user(user)
        ]
        assert [(p.pk, p.name, p.notes, p.conversation_count) for p in rows.places] == [
            (p.pk, p.name, p.notes, p.conversation_count) for p in places_for_user(user)
        ]
    assert not facts_visible_to(family.stranger, family.legacy).exists()


def test_the_rows_stay_in_scope_after_leaving_and_in_another_legacy(family, everything):
    """The SQL rules against the ORM selectors where they could part: a member's deleted
    memory, their superseded and private facts beside a fellow member's, their conversation
    about another legacy they belong to, and the same member after leaving the family."""
    member = family.member
    MembershipFactory(legacy=family.other_legacy, user=member)
    here = ConversationFactory(user=member, legacy=family.legacy)
    there = ConversationFactory(user=member, legacy=family.other_legacy)
    memory_delete(user=member, memory=memory_create(user=member, content="Gone for good",
                                                    category="context"))
    memory_create(user=member, content="Likes the orchard", category="preference")
    current = LegacyFactFactory(legacy=family.legacy, user=member, visibility="shared",
                                content="Rose was a midwife.")
    LegacyFactFactory(legacy=family.legacy, user=member, visibility="shared",
                      superseded_by=current, superseded_at=timezone.now(),
                      content="Rose was a teacher.")
    LegacyFactFactory(legacy=family.other_legacy, user=member, content="Walter sang.")
    LegacyFactFactory(legacy=family.other_legacy, user=family.other_member,
                      content="Walter's own note.")

    def rows_of(conversation):
        rows = context_rows(conversation=conversation, recent=20, turns=3)
        assert [(f.pk, f.user.username) for f in rows.facts] == [
            (f.pk, f.user.username) for f in facts_visible_to(member, conversation.legacy)
        ]
        assert [(m.pk, m.content) for m in rows.memories] == [
            (m.pk, m.content) for m in active_memories_for_user(member)
        ]
        return rows

    assert [f.content for f in rows_of(here).facts] == [
        "Rose was a nurse.", "Member's own note.", "Rose was a midwife."
    ]
    assert [f.content for f in rows_of(there).facts] == ["Walter sang."]
    assert [m.content for m in rows_of(here).memories] == ["Likes the orchard"]

    membership_leave(legacy=family.legacy, user=member)

    assert rows_of(here).facts == []
    assert [f.content for f in rows_of(there).facts] == ["Walter sang."]


def test_cutting_many_lines_counts_the_prompt_a_few_times_and_cuts_the_same_lines(
        talked, counted, settings, monkeypatch):
    """A family with hundreds of shared facts and a packet over budget: the facts are cut as
    counting the prompt again after each cut would cut them, but the prompt is counted a few
    times, not once a fact. Before, every cut counted the whole prompt again: quadratic in the
    facts, and a minute for a packet of a legacy with 3,000 (a member can add them)."""
    words = ("orchard", "hive", "lantern", "harbour", "violin", "kettle", "meadow", "quilt")
    for n in range(400):
        LegacyFactFactory(legacy=talked.legacy, user=talked.user,
                          content=f"Rose kept a {words[n % 8]} diary, page {n}, in {1900 + n}.")
    settings.CONTEXT_TOKEN_BUDGET = 2000

    packet = build_context(conversation=talked, now=NOW)
    prompts = sum(count for text, count in counted.items()
                  if text.startswith(packet.section("persona").head))
    facts_cut = [cut for cut in packet.cuts if cut["part"] == "facts"]
    assert len(facts_cut) > 300
    assert prompts <= 12, prompts
    assert packet.total_tokens() <= 2000

    # The same cuts as counting the prompt after every cut (a slack no estimate passes).
    monkeypatch.setattr(context, "_JOIN_SLACK", 10**9)
    counted.clear()
    every_time = build_context(conversation=talked, now=NOW)
    assert sum(counted.values()) > len(facts_cut)
    assert every_time.cuts == packet.cuts
    assert every_time.system_prompt == packet.system_prompt


def test_thousands_of_facts_take_at_most_their_share_of_the_budget(talked, settings):
    """Over budget, the facts block is cut first to CONTEXT_FACTS_MAX_SHARE of it: an author of
    thousands of facts had the rolling summary, the session state and the retrieved units cut
    for them, and the agent saw facts only."""
    for n in range(400):
        LegacyFactFactory(legacy=talked.legacy, user=talked.user,
                          content=f"Rose kept a diary, page {n}, in {1900 + n}.")
    settings.CONTEXT_TOKEN_BUDGET = 3000

    packet = build_context(conversation=talked, now=NOW)
    facts = packet.section("facts")
    assert count_tokens(facts.render()) <= 1500 < count_tokens(facts.render()) + 30
    assert packet.rolling_summary is not None
    assert {cut["part"] for cut in packet.cuts} == {"facts"}
    assert packet.total_tokens() <= 3000
    # The oldest facts stay, as the cut order keeps them.
    assert facts.rows[0].content.startswith("Rose kept bees")


def test_a_member_who_shares_hundreds_of_long_facts_does_not_crowd_out_the_readers(
        talked, settings, family):
    """Found by a hostile relative: a member shared 120 facts of 500 characters; cut newest
    first, they took the whole facts block of every other member's packet, and every fact
    learned after them (the reader's own included) was cut. Now the author holding most of the
    block loses their newest first: the others' facts stay, in their order."""
    filler = " ".join(["lorem ipsum dolor sit amet consectetur"] * 12)
    for n in range(120):
        LegacyFactFactory(legacy=talked.legacy, user=family.member, visibility="shared",
                          content=f"Rose {n} {filler}")
    mine = LegacyFactFactory(legacy=talked.legacy, user=talked.user,
                             content="Rose grew tomatoes in the greenhouse.")
    settings.CONTEXT_TOKEN_BUDGET = 3000

    packet = build_context(conversation=talked, now=NOW)
    rows = packet.section("facts").rows
    assert mine in rows
    assert [f for f in rows if f.user_id == talked.user_id][:6] == [
        f for f in rows if f.content.startswith("Rose kept bees")]
    assert any(f.user_id == family.member.pk for f in rows)  # their oldest stay, to the cap
    assert [f.extracted_at for f in rows] == sorted(f.extracted_at for f in rows)
    assert packet.total_tokens() <= 3000
    cut_ids = {cut["item"]["id"] for cut in packet.cuts if cut["part"] == "facts"}
    assert str(mine.pk) not in cut_ids and len(cut_ids) > 100


def test_members_added_for_the_purpose_do_not_crowd_out_the_readers_own_facts(
        talked, settings, family):
    """Found by a hostile relative: 30 accounts, each with a fair share of five facts, left the
    reader 7 of their own 20. The reader's own facts are cut last."""
    filler = " ".join(["lorem ipsum dolor sit amet"] * 6)
    for n in range(30):
        sybil = MembershipFactory(legacy=talked.legacy).user
        for k in range(5):
            LegacyFactFactory(legacy=talked.legacy, user=sybil, visibility="shared",
                              content=f"Rose {n}-{k} {filler}")
    mine = [LegacyFactFactory(legacy=talked.legacy, user=talked.user,
                              content=f"Rose grew tomato variety {n}.") for n in range(20)]
    settings.CONTEXT_TOKEN_BUDGET = 3000

    packet = build_context(conversation=talked, now=NOW)
    rows = packet.section("facts").rows
    assert all(fact in rows for fact in mine)
    assert packet.total_tokens() <= 3000
