"""The Idempotency-Key of POST messages, POST turn and the chat form: at most 128 printable
ASCII characters, else a 400 (an error in the chat) and nothing written; a key reused for
another message is a 409 on the messages API, as on /turn; the same message again is still
the earlier one (200)."""

import pytest
from django.test import Client

from conversations.models import Conversation, Message
from conversations.services import IdempotencyConflict, message_append
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db

ERROR = "At most 128 printable ASCII characters."
ENDPOINTS = {
    "messages": ({"role": "user", "content": "Hello"}, 201),
    "turn": ({"content": "Hello"}, 201),
}


@pytest.fixture
def conversation(family):
    return ConversationFactory(user=family.owner, legacy=family.legacy)


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
@pytest.mark.parametrize("key", ["k" * 129, "k" * 300, "clé-1", "tab\there", "new\x7fline"])
def test_a_malformed_key_is_a_400_and_writes_nothing(owner_client, conversation, endpoint, key):
    payload, _ = ENDPOINTS[endpoint]

    response = owner_client.post(f"/api/ai/conversations/{conversation.pk}/{endpoint}", payload,
                                 format="json", HTTP_IDEMPOTENCY_KEY=key)

    assert response.status_code == 400
    assert response.json() == {
        "detail": f"Idempotency-Key: {ERROR}", "code": "invalid",
        "errors": {"Idempotency-Key": [ERROR]},
    }
    assert not Message.objects.filter(conversation=conversation).exists()
    conversation.refresh_from_db()
    assert conversation.message_count == 0


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_a_key_of_128_printable_characters_is_accepted_and_deduplicates(owner_client, conversation,
                                                                        endpoint):
    payload, created = ENDPOINTS[endpoint]
    key = ("Key ~!" + "x" * 128)[:128]
    url = f"/api/ai/conversations/{conversation.pk}/{endpoint}"

    first = owner_client.post(url, payload, format="json", HTTP_IDEMPOTENCY_KEY=key)
    again = owner_client.post(url, payload, format="json", HTTP_IDEMPOTENCY_KEY=key)

    assert (first.status_code, again.status_code) == (created, 200)
    assert Message.objects.filter(conversation=conversation, role="user").get().idempotency_key \
        == key


def test_a_malformed_key_from_the_chat_form_is_an_error_and_writes_nothing(family, conversation):
    browser = Client()
    browser.force_login(family.owner)

    response = browser.post(f"/chat/{conversation.pk}/send",
                            {"content": "Hello", "idempotency_key": "k" * 129})

    assert response.status_code == 302
    page = browser.get(response["Location"]).content.decode()
    assert ERROR in page
    assert not Message.objects.filter(conversation=conversation).exists()


CONFLICT = {"detail": "This Idempotency-Key was already used for another message.",
            "code": "conflict"}


def _url(conversation) -> str:
    return f"/api/ai/conversations/{conversation.pk}/messages"


def _state(conversation) -> tuple:
    conversation = Conversation.objects.get(pk=conversation.pk)
    return (list(Message.objects.values_list("sequence", "role", "content")),
            conversation.message_count, conversation.last_message_at, conversation.turn_count)


@pytest.mark.parametrize("second", [
    {"role": "user", "content": "Goodbye"},
    {"role": "assistant", "content": "Hello"},
])
def test_a_key_reused_for_another_message_is_a_409_and_writes_nothing(owner_client, conversation,
                                                                      second):
    headers = {"HTTP_IDEMPOTENCY_KEY": "msg-1"}
    first = owner_client.post(_url(conversation), {"role": "user", "content": "Hello"},
                              format="json", **headers)
    before = _state(conversation)
    again = owner_client.post(_url(conversation), second, format="json", **headers)

    assert first.status_code == 201
    assert again.status_code == 409
    assert again.json() == CONFLICT
    assert _state(conversation) == before


def test_the_same_message_with_the_same_key_is_still_the_earlier_one(owner_client, conversation):
    headers = {"HTTP_IDEMPOTENCY_KEY": "msg-1"}
    first = owner_client.post(_url(conversation), {"role": "user", "content": "Hello"},
                              format="json", **headers)
    again = owner_client.post(_url(conversation), {"role": "user", "content": "Hello"},
                              format="json", **headers)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()


def test_the_service_raises_and_writes_nothing(conversation):
    message_append(conversation=conversation, role="user", content="Hello",
                   idempotency_key="msg-1")
    before = _state(conversation)
    with pytest.raises(IdempotencyConflict,
                       match="This Idempotency-Key was already used for another message."):
        message_append(conversation=conversation, role="user", content="Hello!",
                       idempotency_key="msg-1")
    assert _state(conversation) == before


def test_a_turn_whose_reply_key_a_message_already_holds_is_a_409(owner_client, conversation):
    owner_client.post(_url(conversation), {"role": "assistant", "content": "Not the reply."},
                      format="json", HTTP_IDEMPOTENCY_KEY="t-1:reply")
    response = owner_client.post(f"/api/ai/conversations/{conversation.pk}/turn",
                                 {"content": "Hello"}, format="json", HTTP_IDEMPOTENCY_KEY="t-1")
    assert response.status_code == 409
    assert response.json() == CONFLICT
    assert not Message.objects.filter(conversation=conversation, role="assistant",
                                      metadata__reply_to=1).exists()
