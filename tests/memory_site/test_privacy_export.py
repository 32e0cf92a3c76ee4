"""GET /api/me/data: everything stored about the caller, nothing of anyone else, few queries."""

from datetime import datetime, timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from rest_framework.authtoken.models import Token

from agent_memory.models import AgentMemoryVersion, Place
from agent_memory.services import memory_create, memory_update, place_add, place_mention_add
from conversations.models import ConversationMemory
from facts.models import LegacyMembership
from memory_site.privacy.selectors import EXPORT_NOTES
from tests.conftest import api_client_for
from tests.factories import (
    ConversationMemoryFactory,
    InvitationFactory,
    LegacyFactFactory,
    LegacyFactory,
    UserFactory,
)
from tests.support.chunks import chunk_for
from tests.support.world import (
    MEMBER_CANARY,
    OTHER_CANARY,
    build_world,
    conversation_with_messages,
    whole_state,
)

pytestmark = pytest.mark.django_db


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def expected_export(world) -> dict:
    family, conversation = world.family, world.conversation
    owner = family.owner
    owner.refresh_from_db()
    conversation.refresh_from_db()
    membership = LegacyMembership.objects.get(legacy=family.legacy, user=owner)
    token = Token.objects.get(user=owner)
    versions = list(AgentMemoryVersion.objects.filter(memory=world.memory).order_by("version_number"))
    deleted_version = AgentMemoryVersion.objects.get(memory=world.deleted_memory)
    mention = world.place.mentions.get()
    fact_row = {
        "legacy_id": str(family.legacy.pk),
        "legacy_name": "Rose Whitfield",
    }
    return {
        "schema_version": "1.2",
        "metadata": {"notes": EXPORT_NOTES, "embeddings_included": False},
        "account": {
            "username": "owner",
            "email": "ann@example.org",
            "first_name": "Ann",
            "last_name": "Whitfield",
            "date_joined": iso(owner.date_joined),
            "last_login": None,
            "api_tokens": [{"created": iso(token.created)}],
        },
        "memberships": [
            {
                "legacy_id": str(family.legacy.pk),
                "legacy_name": "Rose Whitfield",
                "role": "owner",
                "joined_at": iso(membership.joined_at),
                "created_the_legacy": True,
            }
        ],
        "invitations": [],
        "conversations": [
            {
                "id": str(conversation.pk),
                "legacy_id": str(family.legacy.pk),
                "title": "About Rose Whitfield",
                "persona": "",
                "created_at": iso(conversation.created_at),
                "updated_at": iso(conversation.updated_at),
                "last_message_at": None,
                "closed_at": None,
                "called_name": "",
                "session_state": {
                    "status": "active",
                    "active_topics": ["garden"],
                    "open_loops": [],
                    "pending_clarifications": [],
                    "last_intent": "share_memory",
                    "turn_count": 1,
                },
                "messages": [
                    {
                        "id": str(message.pk),
                        "sequence": i,
                        "role": role,
                        "content": content,
                        "token_count": 0,
                        "metadata": metadata,
                        "idempotency_key": None,
                        "created_at": iso(message.created_at),
                    }
                    for i, (message, role, content, metadata) in enumerate(
                        zip(
                            world.messages,
                            ["user", "assistant", "user"],
                            ["Rose grew dahlias.", "Tell me more about her garden.",
                             "She won prizes."],
                            [{}, {"provider": "extractive"}, {}],
                            strict=True,
                        )
                    )
                ],
                "summaries": [
                    {
                        "id": str(world.summary.pk),
                        "memory_text": "Rose grew prize-winning dahlias.",
                        "start_sequence": 0,
                        "end_sequence": 2,
                        "base_memory_id": None,
                        "status": "completed",
                        "generation_time_ms": 12,
                        "error": "",
                        "created_at": iso(world.summary.created_at),
                        "updated_at": iso(world.summary.updated_at),
                    }
                ],
                "chunks": [
                    {
                        "id": str(world.chunk.pk),
                        "content": "The user talked about Rose's dahlias.",
                        "message_range_start": 0,
                        "message_range_end": 2,
                        "created_at": iso(world.chunk.created_at),
                    }
                ],
            }
        ],
        "facts": [
            {
                "id": str(world.private_fact.pk),
                **fact_row,
                "category": "hobby",
                "content": "Rose grew dahlias.",
                "visibility": "private",
                "source_conversation_id": str(conversation.pk),
                "source_range_start": 0,
                "source_range_end": 2,
                "extracted_at": iso(world.private_fact.extracted_at),
                "updated_at": iso(world.private_fact.updated_at),
                "superseded_by_id": None,
                "superseded_at": None,
            },
            {
                "id": str(world.shared_fact.pk),
                **fact_row,
                "category": "milestone",
                "content": "Rose won the county show in 1972.",
                "visibility": "shared",
                "source_conversation_id": None,
                "source_range_start": None,
                "source_range_end": None,
                "extracted_at": iso(world.shared_fact.extracted_at),
                "updated_at": iso(world.shared_fact.updated_at),
                "superseded_by_id": None,
                "superseded_at": None,
            },
        ],
        "agent_memories": [
            {
                "id": world.memory.pk,
                "category": "person",
                "subject": "Rose",
                "created_at": iso(world.memory.created_at),
                "deleted_at": None,
                "deleted_origin": "",
                "evicted_at": None,
                "versions": [
                    {
                        "version": 1,
                        "content": "My grandmother was Rose.",
                        "origin": versions[0].origin,
                        "restored_from": None,
                        "source_conversation_id": str(conversation.pk),
                        "source_message_id": str(world.messages[0].pk),
                        "created_at": iso(versions[0].created_at),
                    },
                    {
                        "version": 2,
                        "content": "My grandmother Rose grew dahlias.",
                        "origin": versions[1].origin,
                        "restored_from": None,
                        "source_conversation_id": None,
                        "source_message_id": None,
                        "created_at": iso(versions[1].created_at),
                    },
                ],
            },
            {
                "id": world.deleted_memory.pk,
                "category": "preference",
                "subject": None,
                "created_at": iso(world.deleted_memory.created_at),
                "deleted_at": iso(world.deleted_memory.deleted_at),
                "deleted_origin": world.deleted_memory.deleted_origin,
                "evicted_at": None,
                "versions": [
                    {
                        "version": 1,
                        "content": "I prefer short answers.",
                        "origin": deleted_version.origin,
                        "restored_from": None,
                        "source_conversation_id": None,
                        "source_message_id": None,
                        "created_at": iso(deleted_version.created_at),
                    }
                ],
            },
        ],
        "places": [
            {
                "place_id": "kew",
                "name": "Kew Gardens",
                "notes": "Her favourite",
                "added_at": iso(world.place.added_at),
                "mentions": [
                    {
                        "conversation_id": str(conversation.pk),
                        "message_id": str(world.messages[2].pk),
                        "mentioned_at": iso(mention.mentioned_at),
                    }
                ],
            }
        ],
    }


@pytest.fixture
def world(family):
    type(family.owner).objects.filter(pk=family.owner.pk).update(
        email="ann@example.org", first_name="Ann", last_name="Whitfield"
    )
    return build_world(family)


def test_the_export_is_exactly_the_callers_data(world):
    client = api_client_for(world.family.owner)
    before = timezone.now()
    response = client.get("/api/me/data")
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == (
        'attachment; filename="legacy-memory-export-owner.json"'
    )
    body = response.json()
    exported_at = datetime.fromisoformat(body.pop("exported_at"))
    assert before <= exported_at <= timezone.now()
    assert body == expected_export(world)


def test_the_export_holds_nothing_of_fellow_members_or_other_families(world):
    client = api_client_for(world.family.owner)
    before = whole_state()
    text = client.get("/api/me/data").content.decode()
    assert MEMBER_CANARY not in text
    assert OTHER_CANARY not in text
    for name in ("member", "other", "stranger", "Walter Brandt"):
        assert f'"{name}"' not in text
    assert str(world.member_conversation.pk) not in text
    assert str(world.member_shared_fact.pk) not in text
    assert whole_state() == before


def test_a_fellow_member_gets_their_own_data_and_none_of_the_owners(world):
    body = api_client_for(world.family.member).get("/api/me/data").json()
    assert [c["id"] for c in body["conversations"]] == [str(world.member_conversation.pk)]
    assert {f["id"] for f in body["facts"]} == {
        str(world.member_shared_fact.pk), str(world.member_private_fact.pk)
    }
    assert body["memberships"][0]["role"] == "member"
    assert body["memberships"][0]["created_the_legacy"] is False
    text = str(body)
    for owners in ("Rose grew dahlias", "county show", "grandmother", "Kew Gardens", "dahlias"):
        assert owners not in text


def test_the_export_holds_the_invitations_sent_and_received_and_no_one_else_s(world):
    """Found by a tester: erase deletes a user's invitations, but the export had none."""
    family = world.family
    aunt = UserFactory(username="aunt")
    sent = InvitationFactory(legacy=family.legacy, invited_user=aunt, invited_by=family.owner,
                             role="member")
    other = LegacyFactory(name="Edith Hale", created_by=aunt)
    received = InvitationFactory(legacy=other, invited_user=family.owner, invited_by=aunt,
                                 role="owner", status="declined")
    InvitationFactory(legacy=other, invited_user=UserFactory(username="cousin"), invited_by=aunt)

    body = api_client_for(family.owner).get("/api/me/data").json()

    assert body["invitations"] == [
        {"id": str(sent.pk), "legacy_id": str(family.legacy.pk), "legacy_name": "Rose Whitfield",
         "direction": "sent", "username": "aunt", "invited_by": "owner", "role": "member",
         "status": "pending", "created_at": iso(sent.created_at), "answered_at": None},
        {"id": str(received.pk), "legacy_id": str(other.pk), "legacy_name": "Edith Hale",
         "direction": "received", "username": "owner", "invited_by": "aunt", "role": "owner",
         "status": "declined", "created_at": iso(received.created_at), "answered_at": None},
    ]


def test_the_export_works_with_a_session_login_too(world, client):
    client.force_login(world.family.owner)
    # What a browser following a download link sends: the answer is still the JSON file.
    browser_accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    response = client.get("/api/me/data", HTTP_ACCEPT=browser_accept)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json()["account"]["username"] == "owner"


@pytest.mark.parametrize("path", ["/api/me/data", "/api/me/data/"])
def test_anonymous_gets_401(anon_client, family, path):
    response = anon_client.get(path)
    assert response.status_code == 401
    assert response.json() == {
        "detail": "Authentication credentials were not provided.",
        "code": "not_authenticated",
    }


def test_a_bad_token_gets_401(anon_client, family):
    anon_client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = anon_client.get("/api/me/data")
    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid token.", "code": "authentication_failed"}


def _lots_of_data(user, legacy, *, scale: int) -> None:
    """`scale` conversations with 2*scale messages, summaries and chunks each, and as many
    facts, memories (with versions) and places (with mentions)."""
    conversations = []
    for c in range(scale):
        conversation = conversation_with_messages(
            legacy=legacy, user=user, contents=[f"Message {c}.{i}" for i in range(2 * scale)]
        )
        conversations.append(conversation)
        for s in range(scale):
            ConversationMemoryFactory(
                conversation=conversation, memory_text=f"summary {s}", start_sequence=0,
                end_sequence=s + 1, status=ConversationMemory.Status.COMPLETED,
            )
            chunk_for(conversation, 2 * s, 2 * s + 2, f"chunk {s}",
                      embedding=[0.5] * settings.EMBEDDING_DIMENSIONS)
    for i in range(scale):
        LegacyFactFactory(legacy=legacy, user=user, content=f"Fact number {i} about her.")
        memory = memory_create(user=user, content=f"Memory {i}", category="context")
        memory_update(user=user, memory=memory, content=f"Memory {i}, second version")
        place, _ = place_add(user=user, place_id=f"p{i}", name=f"Place {i}",
                             conversation=conversations[i])
        place_mention_add(user=user, place=Place.objects.get(pk=place.pk),
                          conversation=conversations[-1],
                          mentioned_at=timezone.now() + timedelta(minutes=i))


def test_the_export_needs_the_same_few_queries_for_a_user_with_many_rows(
    django_assert_max_num_queries,
):
    # Token auth (1), account and its tokens (1), memberships, invitations and facts (3),
    # conversations with messages, summaries and chunks (4), memories with versions (2), places
    # with mentions (2); the user's realm, for the invitations received (1).
    few, many = UserFactory(username="few"), UserFactory(username="many")
    _lots_of_data(few, LegacyFactory(created_by=few), scale=1)
    _lots_of_data(many, LegacyFactory(created_by=many), scale=8)
    queries = 14
    few_client, many_client = api_client_for(few), api_client_for(many)
    with django_assert_max_num_queries(queries):
        small = few_client.get("/api/me/data")
    with django_assert_max_num_queries(queries):
        response = many_client.get("/api/me/data")
    assert small.status_code == response.status_code == 200
    body = response.json()
    assert len(body["conversations"]) == 8
    assert sum(len(c["messages"]) for c in body["conversations"]) == 8 * 16
    assert sum(len(c["summaries"]) for c in body["conversations"]) == 64
    assert sum(len(c["chunks"]) for c in body["conversations"]) == 64
    assert len(body["facts"]) == 8
    assert [len(m["versions"]) for m in body["agent_memories"]] == [2] * 8
    assert [len(p["mentions"]) for p in body["places"]] == [2] * 8


def test_the_export_reads_no_vector(family):
    """A long history's export took 2 GB of a web worker: every message's embedding was read
    into Python and then left out of the export."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _lots_of_data(family.owner, family.legacy, scale=2)
    with CaptureQueriesContext(connection) as queries:
        assert api_client_for(family.owner).get("/api/me/data").status_code == 200
    units = [q["sql"] for q in queries.captured_queries
             if 'FROM "conversations_message"' in q["sql"]
             or 'FROM "conversations_conversationchunk"' in q["sql"]]
    assert len(units) == 2
    for sql in units:
        assert '"embedding"' not in sql and '"embedding_bits"' not in sql, sql
        assert '"search_vector"' not in sql, sql
