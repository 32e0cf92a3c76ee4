"""Agent turns of one user message run once: a concurrent retry is a 409, and a tool call is
committed together with its tool message."""

import threading
import time

import pytest
from django.db import connections

from agent_memory.models import AgentMemory
from conversations.models import Message
from conversations.services import turn
from conversations.services.turn import turn_run
from tests.conftest import api_client_for
from tests.factories import ConversationFactory

ANNA = {"content": "Anna is the user's sister", "category": "person", "subject": "Anna"}


def _roles(conversation) -> list[str]:
    return list(Message.objects.filter(conversation=conversation).order_by("sequence")
                .values_list("role", flat=True))


@pytest.mark.django_db(transaction=True)
def test_a_retry_while_the_first_request_runs_is_a_409_and_no_tool_runs_twice(family, openai_llm):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    url = f"/api/ai/conversations/{conversation.pk}/turn"
    headers = {"HTTP_IDEMPOTENCY_KEY": "turn-slow"}
    # The first model call answers slowly with a tool call; the second answers the reply.
    openai_llm.chat_tool_calls([("add_to_memory", ANNA)], delay=2.0)
    openai_llm.chat_text("I'll remember that Anna is your sister.")
    first: dict = {}

    def send_first() -> None:
        try:
            first["response"] = api_client_for(family.owner).post(
                url, {"content": "Anna is my sister"}, format="json", **headers
            )
        finally:
            connections.close_all()

    thread = threading.Thread(target=send_first)
    thread.start()
    deadline = time.monotonic() + 10
    while not openai_llm.calls("chat") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(openai_llm.calls("chat")) == 1, "the first request never reached the model"

    retry = api_client_for(family.owner).post(url, {"content": "Anna is my sister"},
                                              format="json", **headers)

    assert retry.status_code == 409
    assert retry.json() == {"detail": "A turn for this message is still running.",
                            "code": "turn_in_progress"}
    assert _roles(conversation) == ["user"]
    thread.join(timeout=15)
    assert first["response"].status_code == 201
    assert first["response"].json()["reply"] == "I'll remember that Anna is your sister."
    assert len(openai_llm.calls("chat")) == 2
    assert AgentMemory.objects.filter(user=family.owner).count() == 1
    assert _roles(conversation) == ["user", "tool", "assistant"]

    done = api_client_for(family.owner).post(url, {"content": "Anna is my sister"},
                                             format="json", **headers)
    assert done.status_code == 200 and done.json()["replayed"] is True
    assert len(openai_llm.calls("chat")) == 2


@pytest.mark.django_db
def test_a_crash_between_a_tool_call_and_its_record_leaves_neither(family, openai_llm,
                                                                   monkeypatch):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    openai_llm.chat_tool_calls([("add_to_memory", ANNA)])
    append = turn.message_append

    def crash_before_the_tool_message(**kwargs):
        if kwargs["role"] == Message.Role.TOOL:
            raise RuntimeError("worker killed")
        return append(**kwargs)

    monkeypatch.setattr(turn, "message_append", crash_before_the_tool_message)
    with pytest.raises(RuntimeError, match="worker killed"):
        turn_run(conversation=conversation, content="Anna is my sister", idempotency_key="k-7")

    assert not AgentMemory.objects.filter(user=family.owner).exists()
    assert _roles(conversation) == ["user"]

    monkeypatch.undo()
    openai_llm.chat_tool_calls([("add_to_memory", ANNA)])
    openai_llm.chat_text("Got it.")
    result = turn_run(conversation=conversation, content="Anna is my sister",
                      idempotency_key="k-7")

    assert result.assistant_message.content == "Got it."
    assert [c["result"]["ok"] for c in result.tool_calls] == [True]
    assert AgentMemory.objects.filter(user=family.owner).count() == 1
    assert _roles(conversation) == ["user", "tool", "assistant"]
