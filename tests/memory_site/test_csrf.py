"""The dashboard's writing POSTs of memories and chat refuse a request without its CSRF token
(403, nothing written) and accept the token the page's own form carries."""


import pytest

from agent_memory.models import AgentMemory, AgentMemoryVersion, Place
from agent_memory.services import memory_create
from conversations.models import Conversation, Message
from tests.factories import ConversationFactory
from tests.support.csrf import csrf_token, signed_in

pytestmark = pytest.mark.django_db


_signed_in = signed_in


_csrf = csrf_token


def _written() -> tuple:
    return (
        list(Conversation.objects.order_by("pk").values_list(
            "pk", "title", "message_count", "last_message_at", "turn_count", "status")),
        list(Message.objects.order_by("pk").values_list("pk", "content")),
        list(AgentMemory.objects.order_by("pk").values_list("pk", "deleted_at")),
        AgentMemoryVersion.objects.count(),
        Place.objects.count(),
    )


@pytest.fixture
def memory(family):
    return memory_create(user=family.owner, content="Likes tea", category="preference")


@pytest.fixture
def conversation(family):
    return ConversationFactory(user=family.owner, legacy=family.legacy)


@pytest.mark.parametrize("htmx", [False, True])
def test_deleting_a_memory_needs_the_csrf_token(family, memory, htmx):
    client = _signed_in(family.owner)
    url = f"/memories/{memory.pk}/delete"
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    before = _written()

    assert client.post(url, **headers).status_code == 403
    assert _written() == before

    token = _csrf(client, url)
    assert client.post(url, {"csrfmiddlewaretoken": token}).status_code == 302
    assert AgentMemory.objects.get(pk=memory.pk).deleted_at is not None


@pytest.mark.parametrize("htmx", [False, True])
def test_sending_a_chat_message_needs_the_csrf_token(family, conversation, htmx):
    client = _signed_in(family.owner)
    url = f"/chat/{conversation.pk}/send"
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    before = _written()

    response = client.post(url, {"content": "Remember that Rose loved the lake.",
                                 "idempotency_key": "k"}, **headers)
    assert response.status_code == 403
    assert _written() == before

    token = _csrf(client, f"/chat/{conversation.pk}")
    sent = client.post(url, {"content": "Remember that Rose loved the lake.",
                             "idempotency_key": "k", "csrfmiddlewaretoken": token})
    assert sent.status_code == 302
    assert Message.objects.filter(conversation=conversation, role="user").count() == 1


@pytest.mark.parametrize("htmx", [False, True])
def test_starting_a_chat_needs_the_csrf_token(family, htmx):
    client = _signed_in(family.owner)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    before = _written()

    response = client.post("/chat/start", {"legacy_id": family.legacy.pk, "title": "Lake days"},
                           **headers)
    assert response.status_code == 403
    assert _written() == before

    token = _csrf(client, f"/chat?legacy={family.legacy.pk}")
    started = client.post("/chat/start", {"legacy_id": family.legacy.pk, "title": "Lake days",
                                          "csrfmiddlewaretoken": token})
    assert started.status_code == 302
    assert Conversation.objects.filter(user=family.owner, title="Lake days").count() == 1
