"""A turn answers its own user message: the packet it is given ends at that message (later
messages are neither replayed nor in the raw turns, and the search is for that message), also
when the turn runs after later messages (a retry of a message whose turn never ran) or beside
other turns of the same conversation; its reply is appended after the latest message and
names the message it answers (`metadata.reply_to`)."""

import json
import threading

import pytest
from django.db import connections

from agent_memory.selectors import active_memories_for_user
from conversations.models import Message
from conversations.services import message_append, turn
from conversations.services.turn import turn_run
from tests.conftest import api_client_for
from tests.factories import ConversationFactory, ConversationMemoryFactory

pytestmark = pytest.mark.django_db

CAT = "Remember that my cat is called Tom."
DOG = "Remember that my dog is called Rex."


@pytest.fixture
def conversation(family):
    return ConversationFactory(user=family.owner, legacy=family.legacy)


def _url(conversation, path: str = "turn") -> str:
    return f"/api/ai/conversations/{conversation.pk}/{path}"


def _stored(user) -> list[str]:
    return sorted(m.content for m in active_memories_for_user(user))


def test_a_retried_turn_of_an_earlier_message_answers_that_message(family, owner_client,
                                                                   conversation):
    saved = owner_client.post(_url(conversation, "messages"), {"role": "user", "content": CAT},
                              format="json", HTTP_IDEMPOTENCY_KEY="k-cat")
    assert saved.status_code == 201
    dog = owner_client.post(_url(conversation), {"content": DOG}, format="json")
    assert dog.status_code == 201

    cat = owner_client.post(_url(conversation), {"content": CAT}, format="json",
                            HTTP_IDEMPOTENCY_KEY="k-cat")

    assert cat.status_code == 201
    body = cat.json()
    assert body["replayed"] is False
    assert body["user_message"]["sequence"] == 0
    [call] = body["tool_calls"]
    assert call["name"] == "add_to_memory" and call["result"]["ok"] is True
    assert json.loads(call["arguments"])["content"] == "My cat is called Tom"
    assert "My cat is called Tom" in body["reply"] and "Rex" not in body["reply"]
    assert _stored(family.owner) == ["My cat is called Tom", "My dog is called Rex"]
    # The reply comes after the latest message and says which message it answers.
    rows = list(Message.objects.filter(conversation=conversation).order_by("sequence")
                .values_list("sequence", "role", "metadata__reply_to"))
    assert rows == [(0, "user", None), (1, "user", None), (2, "tool", 1), (3, "assistant", 1),
                    (4, "tool", 0), (5, "assistant", 0)]
    assert body["assistant_message"]["sequence"] == 5

    again = owner_client.post(_url(conversation), {"content": CAT}, format="json",
                              HTTP_IDEMPOTENCY_KEY="k-cat")
    assert again.status_code == 200 and again.json()["replayed"] is True
    assert again.json()["assistant_message"] == body["assistant_message"]


def test_the_packet_of_a_turn_ends_at_its_own_user_message(family, conversation, openai_llm):
    message_append(conversation=conversation, role="user", content="Hello there.")  # 0
    message_append(conversation=conversation, role="assistant", content="Hello.")  # 1
    message_append(conversation=conversation, role="user", content="Rose sang in a choir.",
                   idempotency_key="k-choir")  # 2, its turn never ran
    message_append(conversation=conversation, role="user", content="Walter fixed clocks.")  # 3
    message_append(conversation=conversation, role="assistant", content="Clocks!",
                   metadata={"reply_to": 3})  # 4
    # A completed summary that covers the later messages is not the turn's to see.
    ConversationMemoryFactory(conversation=conversation, start_sequence=0, end_sequence=4,
                              memory_text="They talked about Walter's clocks.")
    openai_llm.chat_text("A choir, lovely.")

    result = turn_run(conversation=conversation, content="Rose sang in a choir.",
                      idempotency_key="k-choir")

    packet = result.packet
    assert result.user_message.sequence == 2
    assert [(m.sequence, m.role) for m in packet.messages] == [(0, "user"), (1, "assistant"),
                                                               (2, "user")]
    assert [[m.sequence for m in t] for t in packet.raw_turns] == [[0, 1], [2]]
    assert packet.query == "Rose sang in a choir."
    assert "Walter" not in packet.system_prompt
    [call] = openai_llm.calls("chat")
    assert call.messages[1:] == [
        {"role": "user", "content": "Hello there."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Rose sang in a choir."},
    ]
    assert (result.assistant_message.sequence,
            result.assistant_message.metadata["reply_to"]) == (5, 2)


def test_the_packet_of_the_latest_message_is_unchanged(family, conversation, openai_llm):
    message_append(conversation=conversation, role="user", content="Hello there.")
    message_append(conversation=conversation, role="assistant", content="Hello.")
    openai_llm.chat_text("Tell me more.")

    result = turn_run(conversation=conversation, content="Rose sang in a choir.")

    assert [(m.sequence, m.role) for m in result.packet.messages] == [
        (0, "user"), (1, "assistant"), (2, "user")
    ]
    assert [[m.sequence for m in t] for t in result.packet.raw_turns] == [[0, 1], [2]]


@pytest.mark.django_db(transaction=True)
def test_concurrent_turns_of_one_conversation_each_answer_their_own_message(family, monkeypatch):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    pets = ["Tom", "Rex", "Polly", "Goldie"]
    # Every turn builds its context only once all the user messages are saved: the order in
    # which a busy server would interleave them, made certain.
    barrier = threading.Barrier(len(pets))
    build_context = turn.build_context

    def build_after_every_message(**kwargs):
        barrier.wait(timeout=20)
        return build_context(**kwargs)

    monkeypatch.setattr(turn, "build_context", build_after_every_message)
    responses: dict[str, object] = {}
    errors: list[BaseException] = []

    def send(name: str) -> None:
        try:
            responses[name] = api_client_for(family.owner).post(
                _url(conversation), {"content": f"Remember that my pet {name} is lovely."},
                format="json",
            )
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send, args=(name,)) for name in pets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []

    for name in pets:
        response = responses[name]
        assert response.status_code == 201, response.content
        body = response.json()
        [call] = body["tool_calls"]
        assert json.loads(call["arguments"])["content"] == f"My pet {name} is lovely"
        assert call["result"]["ok"] is True
        reply = Message.objects.get(pk=body["assistant_message"]["id"])
        assert reply.metadata["reply_to"] == body["user_message"]["sequence"]
    assert _stored(family.owner) == sorted(f"My pet {name} is lovely" for name in pets)
