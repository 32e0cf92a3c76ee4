"""Real API answers match the OpenAPI schema: every key documented, no undocumented key, every
type and format as documented; errors in the shared error body."""

import pytest
import yaml

from conversations.services import message_append
from tests.conftest import api_client_for
from tests.factories import ConversationFactory, ConversationMemoryFactory
from tests.support.schema import (
    assert_documented,
    documented_properties,
)
from tests.support.world import build_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def spec(client) -> dict:
    return yaml.safe_load(client.get("/api/schema").content)


@pytest.fixture
def world(family):
    """The owner's rows of every kind (tests/support/world.py), and a conversation going on
    now whose context retrieves from the earlier one and has a summary built on another."""
    world = build_world(family)
    now = ConversationFactory(user=family.owner, legacy=family.legacy, title="Now")
    for role, content in (
        ("user", "Her dahlias won prizes."), ("assistant", "Tell me more."),
        ("user", "Did she grow roses?"), ("assistant", "She did."),
        ("user", "Where are her dahlias now?"),
    ):
        message_append(conversation=now, role=role, content=content)
    base = ConversationMemoryFactory(
        conversation=now, memory_text="They began with the dahlias.", start_sequence=0,
        end_sequence=1, status="completed",
    )
    ConversationMemoryFactory(
        conversation=now, memory_text="Dahlias and roses.", start_sequence=0, end_sequence=3,
        status="completed", base_memory=base,
    )
    ConversationMemoryFactory(
        conversation=now, memory_text="", start_sequence=0, end_sequence=4, status="processing",
    )
    world.now = now
    return world


def test_the_context_answer_is_the_documented_packet(world, spec, settings):
    client = api_client_for(world.family.owner)
    url = f"/api/ai/conversations/{world.now.pk}/context"
    path = "/api/ai/conversations/{conversation_id}/context"

    response = client.get(url, {"query": "dahlias"})

    assert response.status_code == 200
    body = assert_documented(response, spec, path, "get")
    assert set(body) == documented_properties(spec, path, "get", 200)
    parts = body["parts"]
    assert parts["retrieved"] and parts["facts"] and parts["memories"] and parts["places"]
    assert parts["rolling_summary"] is not None and body["active_job_refs"]
    assert body["cuts"] == []

    # Over budget, the cuts are documented too.
    settings.CONTEXT_TOKEN_BUDGET = body["token_counts"]["total"] - 1
    response = client.get(url, {"query": "dahlias"})
    assert response.status_code == 200
    assert assert_documented(response, spec, path, "get")["cuts"] != []


def test_the_turn_answer_and_its_replay_are_documented(world, spec):
    client = api_client_for(world.family.owner)
    url = f"/api/ai/conversations/{world.now.pk}/turn"
    path = "/api/ai/conversations/{conversation_id}/turn"
    send = {"content": "Remember that my sister Anna bakes on Sundays."}

    first = client.post(url, send, format="json", HTTP_IDEMPOTENCY_KEY="turn-1")
    replay = client.post(url, send, format="json", HTTP_IDEMPOTENCY_KEY="turn-1")

    assert (first.status_code, replay.status_code) == (201, 200)
    body = assert_documented(first, spec, path, "post")
    assert set(body) == documented_properties(spec, path, "post", 201)
    assert body["tool_calls"] and body["replayed"] is False
    replayed = assert_documented(replay, spec, path, "post")
    assert set(replayed) == documented_properties(spec, path, "post", 200)
    assert replayed["replayed"] is True and replayed["tool_calls"] == body["tool_calls"]


def test_the_checkpoint_memory_document_and_export_are_documented(world, spec):
    client = api_client_for(world.family.owner)
    client.post(f"/api/ai/conversations/{world.now.pk}/turn",
                {"content": "Remember that Rose loved the sea."}, format="json")

    checkpoint = client.get(f"/api/ai/conversations/{world.now.pk}/checkpoint")
    document = client.get("/api/memory/document")
    export = client.get("/api/me/data")

    assert (checkpoint.status_code, document.status_code, export.status_code) == (200, 200, 200)
    body = assert_documented(
        checkpoint, spec, "/api/ai/conversations/{conversation_id}/checkpoint", "get"
    )
    assert body["last_turns"] and body["summary_delta"]["base_memory_id"] is not None
    body = assert_documented(document, spec, "/api/memory/document", "get")
    assert {f["is_active"] for f in body["facts"]} == {True, False}
    assert body["placer_user_datapoints"][0]["mentioned_in"]
    body = assert_documented(export, spec, "/api/me/data", "get")
    assert all(body[key] for key in ("memberships", "facts", "conversations", "agent_memories",
                                     "places"))


def test_errors_answer_the_documented_error_body(world, spec, anon_client):
    owner = api_client_for(world.family.owner)
    stranger = api_client_for(world.family.stranger)
    turn = f"/api/ai/conversations/{world.now.pk}/turn"
    turn_path = "/api/ai/conversations/{conversation_id}/turn"
    owner.post(turn, {"content": "Hello."}, format="json", HTTP_IDEMPOTENCY_KEY="k")

    answers = [
        (anon_client.post(turn, {"content": "Hi."}, format="json"), 401),
        (stranger.post(turn, {"content": "Hi."}, format="json"), 404),
        (owner.post(turn, {"content": ""}, format="json"), 400),
        (owner.post(turn, {"content": "Other."}, format="json", HTTP_IDEMPOTENCY_KEY="k"), 409),
    ]

    for response, status in answers:
        assert response.status_code == status
        body = assert_documented(response, spec, turn_path, "post")
        assert ("errors" in body) == (status == 400)
    member = api_client_for(world.family.member)
    response = member.patch(f"/api/ai/facts/{world.shared_fact.pk}", {"content": "Changed."},
                            format="json")
    assert response.status_code == 403
    assert_documented(response, spec, "/api/ai/facts/{fact_id}", "patch")
