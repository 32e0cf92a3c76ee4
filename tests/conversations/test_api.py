"""The conversations API: start a conversation and append messages, with bad input."""

import pytest

from conversations.models import Message
from tests.factories import ConversationFactory
from tests.support.rows import family_and_conversation_rows

pytestmark = pytest.mark.django_db


_state = family_and_conversation_rows


def test_start_a_conversation_and_append_messages(owner_client, family):
    response = owner_client.post(
        "/api/ai/conversations",
        {"legacy_id": str(family.legacy.pk), "title": "Summers at the lake"},
        format="json",
    )
    assert response.status_code == 201
    conversation = response.json()
    assert conversation["status"] == "active"
    assert conversation["session_state"]["turn_count"] == 0
    url = f"/api/ai/conversations/{conversation['id']}/messages"
    for n, role in enumerate(["user", "assistant", "user"]):
        response = owner_client.post(url, {"role": role, "content": f"m{n}"}, format="json")
        assert response.status_code == 201
        assert response.json()["sequence"] == n
        assert response.json()["role"] == role
        assert response.json()["token_count"] >= 1
    body = owner_client.get(url).json()
    assert [m["sequence"] for m in body["messages"]] == [0, 1, 2]
    assert body["total"] == 3
    body = owner_client.get(url + "?after=0").json()
    assert [m["content"] for m in body["messages"]] == ["m1", "m2"]
    detail = owner_client.get(f"/api/ai/conversations/{conversation['id']}/").json()
    assert detail["message_count"] == 3
    listing = owner_client.get(f"/api/ai/conversations?legacy_id={family.legacy.pk}").json()
    assert [c["id"] for c in listing["conversations"]] == [conversation["id"]]
    other = owner_client.get(f"/api/ai/conversations?legacy_id={family.other_legacy.pk}").json()
    assert other["conversations"] == []


def test_an_idempotency_key_never_writes_a_message_twice(owner_client, family):
    conversation = ConversationFactory(legacy=family.legacy, user=family.owner)
    url = f"/api/ai/conversations/{conversation.pk}/messages"
    headers = {"HTTP_IDEMPOTENCY_KEY": "turn-1"}
    first = owner_client.post(url, {"role": "user", "content": "hi"}, format="json", **headers)
    again = owner_client.post(url, {"role": "user", "content": "hi"}, format="json", **headers)
    assert first.status_code == 201
    assert again.status_code == 200
    assert again.json() == first.json()
    assert Message.objects.filter(conversation=conversation).count() == 1


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"role": "wizard", "content": "hello"}, "role"),
        ({"role": "user", "content": ""}, "content"),
        ({"role": "user", "content": "   "}, "content"),
        ({"role": "user"}, "content"),
        ({"content": "hello"}, "role"),
    ],
)
def test_append_message_bad_input(owner_client, family, payload, field):
    conversation = ConversationFactory(legacy=family.legacy, user=family.owner)
    before = _state()
    response = owner_client.post(
        f"/api/ai/conversations/{conversation.pk}/messages", payload, format="json"
    )
    assert response.status_code == 400
    assert field in response.json()["errors"]
    assert _state() == before


def test_oversized_content_is_rejected_by_the_setting(owner_client, family, settings):
    settings.MESSAGE_MAX_CHARS = 50
    conversation = ConversationFactory(legacy=family.legacy, user=family.owner)
    before = _state()
    response = owner_client.post(
        f"/api/ai/conversations/{conversation.pk}/messages",
        {"role": "user", "content": "x" * 51},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["errors"] == {"content": ["At most 50 characters."]}
    assert _state() == before


def test_conversation_in_a_legacy_i_do_not_belong_to_is_404(owner_client, family):
    before = _state()
    response = owner_client.post(
        "/api/ai/conversations", {"legacy_id": str(family.other_legacy.pk)}, format="json"
    )
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found.", "code": "not_found"}
    response = owner_client.post("/api/ai/conversations", {"legacy_id": "nope"}, format="json")
    assert response.status_code == 400
    assert "legacy_id" in response.json()["errors"]
    assert _state() == before


def test_a_non_uuid_id_in_a_path_is_a_json_404(owner_client):
    response = owner_client.get("/api/ai/conversations/not-a-uuid/messages")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found.", "code": "not_found"}


def test_an_oversized_title_or_persona_is_a_400_and_nothing_is_written(owner_client, family,
                                                                       settings):
    settings.CONVERSATION_TITLE_MAX_CHARS = 10
    settings.PERSONA_MAX_CHARS = 20
    before = _state()
    response = owner_client.post(
        "/api/ai/conversations",
        {"legacy_id": str(family.legacy.pk), "title": "x" * 11, "persona": "y" * 21},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "title": ["At most 10 characters."], "persona": ["At most 20 characters."],
    }
    assert _state() == before
