"""Context and checkpoint APIs, hydration after a restart, authorization, and the leak test."""

from datetime import UTC, datetime

import pytest
from django.db import connections

from agent_memory.services import memory_create
from conversations.context import build_context
from conversations.models import Conversation, ConversationMemory
from conversations.selectors import conversation_for_user
from conversations.services import message_append
from facts.selectors import legacy_for_member
from memory_site.core.errors import NotFound
from tests.conftest import api_client_for
from tests.factories import (
    ConversationFactory,
    ConversationMemoryFactory,
    LegacyFactFactory,
    LegacyFactory,
)
from tests.support.chunks import chunk_for

pytestmark = pytest.mark.django_db

CANARY = "CANARY-7f3a9 quokka-lighthouse"


@pytest.fixture
def conversation(family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    for i in range(8):
        message_append(conversation=conversation, role="user" if i % 2 == 0 else "assistant",
                       content=f"Turn {i}: Rose and the lighthouse." if i % 2 == 0 else f"Ok {i}.")
    first = ConversationMemoryFactory(
        conversation=conversation, memory_text="They began with the lighthouse.",
        start_sequence=0, end_sequence=3, status="completed",
    )
    ConversationMemoryFactory(
        conversation=conversation, memory_text="They talked about the lighthouse keeper.",
        start_sequence=0, end_sequence=5, status="completed", base_memory=first,
    )
    return conversation


def test_the_context_api_answers_the_packet(family, owner_client, conversation):
    memory_create(user=family.owner, content="Alec is the user's brother", category="person",
                  subject="Alec")

    response = owner_client.get(f"/api/ai/conversations/{conversation.pk}/context",
                                {"query": "lighthouse"})

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {
        "conversation_id", "session_status", "context_compiled_at", "query", "system_prompt",
        "messages", "token_counts", "cuts", "warnings", "parts", "rolling_session_summary",
        "recent_turn_summaries", "active_topics", "active_job_refs", "pending_clarifications",
        "open_loops", "resolved_entities_map", "last_response_type",
    }
    assert body["conversation_id"] == str(conversation.pk)
    assert body["messages"][0] == {"role": "system", "content": body["system_prompt"]}
    # The last CONTEXT_RAW_TURNS (3) turns verbatim, though the summary covers up to 5.
    assert [m["content"] for m in body["messages"][1:]] == [
        "Turn 2: Rose and the lighthouse.", "Ok 3.", "Turn 4: Rose and the lighthouse.", "Ok 5.",
        "Turn 6: Rose and the lighthouse.", "Ok 7.",
    ]
    assert body["rolling_session_summary"] == "They talked about the lighthouse keeper."
    assert body["parts"]["rolling_summary"]["end_sequence"] == 5
    assert [m["subject"] for m in body["parts"]["memories"]] == ["Alec"]
    assert list(body["resolved_entities_map"]) == ["Alec"]
    assert body["last_response_type"] == "text"
    assert body["token_counts"]["total"] <= body["token_counts"]["budget"]
    assert len(body["recent_turn_summaries"]) == 3
    assert body["query"] == "lighthouse"


def test_an_oversized_context_query_is_a_400(owner_client, conversation):
    response = owner_client.get(f"/api/ai/conversations/{conversation.pk}/context",
                                {"query": "x" * 1001})
    assert response.status_code == 400
    assert response.json()["errors"] == {"query": ["At most 1000 characters."]}


def test_the_checkpoint_is_derived_from_the_database(owner_client, conversation):
    response = owner_client.get(f"/api/ai/conversations/{conversation.pk}/checkpoint")

    assert response.status_code == 200
    body = response.json()
    assert body["session_state"]["turn_count"] == 4
    assert body["session_state"]["status"] == conversation.status
    assert [[m["sequence"] for m in turn] for turn in body["last_turns"]] == [[2, 3], [4, 5], [6, 7]]
    delta = body["summary_delta"]
    assert (delta["start_sequence"], delta["end_sequence"], delta["new_from_sequence"]) == (0, 5, 4)
    assert delta["memory_text"] == "They talked about the lighthouse keeper."
    assert delta["base_memory_text"] == "They began with the lighthouse."


def test_the_summary_delta_starts_where_the_window_does_when_it_moved_past_the_base(
    owner_client, conversation
):
    base = ConversationMemory.objects.get(conversation=conversation, end_sequence=3)
    ConversationMemoryFactory(
        conversation=conversation, memory_text="The keeper's lamp.", start_sequence=6,
        end_sequence=7, status="completed", base_memory=base,
    )

    delta = owner_client.get(f"/api/ai/conversations/{conversation.pk}/checkpoint").json()[
        "summary_delta"
    ]

    # Built from messages 6-7 (the window), not 4-7: 4 and 5 were never read.
    assert (delta["start_sequence"], delta["end_sequence"], delta["new_from_sequence"],
            delta["dropped_before_sequence"]) == (6, 7, 6, 6)
    assert delta["base_memory_id"] == str(base.pk)


@pytest.mark.django_db(transaction=True)
def test_a_reopened_conversation_gets_the_same_context_after_every_process_restarted(
    family, conversation
):
    from memory_site.core.ai import providers, tokens

    now = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    chunk_for(ConversationFactory(user=family.owner, legacy=family.legacy), 0, 20,
              "The lighthouse keeper was Rose's father.")
    before = build_context(conversation=conversation, now=now)
    before_messages, before_counts = before.chat_messages(), before.token_counts()
    client = api_client_for(family.owner)
    checkpoint_before = client.get(f"/api/ai/conversations/{conversation.pk}/checkpoint").json()

    # Nothing survives but the database: connections, cached providers and encodings go.
    connections.close_all()
    providers._llm.cache_clear()
    providers._embedder.cache_clear()
    tokens._encoding.cache_clear()
    reopened = Conversation.objects.get(pk=conversation.pk)
    after = build_context(conversation=reopened, now=now)

    assert after.chat_messages() == before_messages
    assert after.token_counts() == before_counts
    assert client.get(f"/api/ai/conversations/{reopened.pk}/checkpoint").json() == checkpoint_before


@pytest.mark.parametrize("route", ["context", "checkpoint"])
@pytest.mark.parametrize("who", ["anon", "stranger", "other_member", "member"])
def test_only_the_owner_of_the_conversation_reads_its_context(family, conversation, route, who):
    client = api_client_for(None if who == "anon" else getattr(family, who))

    response = client.get(f"/api/ai/conversations/{conversation.pk}/{route}")

    if who == "anon":
        assert response.status_code == 401
        assert response.json()["code"] == "not_authenticated"
    else:
        assert response.status_code == 404
        assert response.json() == {"detail": "Not found.", "code": "not_found"}


@pytest.mark.parametrize("route", ["context", "checkpoint"])
def test_the_owner_reads_context_and_checkpoint(owner_client, conversation, route):
    assert owner_client.get(f"/api/ai/conversations/{conversation.pk}/{route}").status_code == 200


def test_a_canary_of_other_families_and_users_never_leaks(family, owner_client, conversation):
    # Another family: a private fact, a memory and chunks with the canary.
    other_conversation = ConversationFactory(user=family.other_member, legacy=family.other_legacy)
    LegacyFactFactory(legacy=family.other_legacy, user=family.other_member,
                      content=f"Rose lighthouse {CANARY}")
    memory_create(user=family.other_member, content=f"Rose lighthouse {CANARY}", category="context")
    chunk_for(other_conversation, 0, 20, f"Rose lighthouse {CANARY}")
    message_append(conversation=other_conversation, role="user", content=f"Rose lighthouse {CANARY}")
    # A fellow member of the same legacy: private fact, memory, chunks and messages.
    fellow = ConversationFactory(user=family.member, legacy=family.legacy)
    LegacyFactFactory(legacy=family.legacy, user=family.member, content=f"Rose lighthouse {CANARY}")
    memory_create(user=family.member, content=f"Rose lighthouse {CANARY} too", category="context")
    chunk_for(fellow, 0, 20, f"Rose lighthouse {CANARY}")
    message_append(conversation=fellow, role="user", content=f"Rose lighthouse {CANARY}")
    # My own conversation about another legacy.
    mine_elsewhere = ConversationFactory(
        user=family.owner, legacy=LegacyFactory(created_by=family.owner)
    )
    chunk_for(mine_elsewhere, 0, 20, f"Rose lighthouse {CANARY}")

    search = owner_client.get(f"/api/ai/legacies/{family.legacy.pk}/search",
                              {"q": f"Rose lighthouse {CANARY}", "k": 20})
    context = owner_client.get(f"/api/ai/conversations/{conversation.pk}/context",
                               {"query": "Rose lighthouse quokka-lighthouse"})
    turn = owner_client.post(f"/api/ai/conversations/{conversation.pk}/turn",
                             {"content": "Tell me about Rose and the lighthouse"}, format="json")
    checkpoint = owner_client.get(f"/api/ai/conversations/{conversation.pk}/checkpoint")

    for response in (search, context, turn, checkpoint):
        assert response.status_code in (200, 201)
        assert CANARY.split()[0] not in response.content.decode()
    assert search.json()["total"] > 0  # my own rows were searched; none carried the canary


@pytest.mark.parametrize("bad_id", ["not-a-uuid", "12345", ""])
def test_the_scoped_selectors_answer_404_for_a_malformed_id(family, bad_id):
    with pytest.raises(NotFound):
        conversation_for_user(user=family.owner, conversation_id=bad_id)
    with pytest.raises(NotFound):
        legacy_for_member(user=family.owner, legacy_id=bad_id)


@pytest.mark.parametrize("path", [
    "/api/ai/conversations/not-a-uuid/context",
    "/api/ai/conversations/not-a-uuid/checkpoint",
    "/api/ai/legacies/not-a-uuid/search?q=lake",
])
def test_a_malformed_id_in_the_api_is_a_404(owner_client, path):
    response = owner_client.get(path)
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found.", "code": "not_found"}
