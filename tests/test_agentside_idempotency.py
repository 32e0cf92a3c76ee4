"""The Idempotency-Key of POST messages, POST turn and the chat form: at most 128 printable
ASCII characters, else a 400 (an error in the chat) and nothing written."""

import pytest
from django.test import Client

from conversations.models import Message
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
