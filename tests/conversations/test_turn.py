"""POST /api/ai/conversations/{id}/turn: offline and OpenAI turns, tools, failures, retries;
turns of one user message run once (a concurrent retry is a 409) and a tool call is committed
together with its tool message."""

import json
import threading
import time

import pytest
from django.db import connections

from agent_memory.models import AgentMemory
from agent_memory.selectors import active_memories_for_user
from conversations.models import ConversationMemory, Message
from conversations.services import turn
from conversations.services.turn import turn_run
from memory_site.core.ai.offline.chat import OFFLINE_NOTICE
from tests.conftest import api_client_for
from tests.factories import ConversationFactory, LegacyFactFactory
from tests.support.chunks import chunk_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(family):
    return ConversationFactory(user=family.owner, legacy=family.legacy)


def _url(conversation) -> str:
    return f"/api/ai/conversations/{conversation.pk}/turn"


def test_an_offline_turn_saves_both_messages_and_answers_honestly(family, owner_client, conversation):
    earlier = ConversationFactory(user=family.owner, legacy=family.legacy)
    chunk_for(earlier, 0, 20, "Rose taught the grandchildren to fish at the lake.")
    LegacyFactFactory(legacy=family.legacy, user=family.owner, content="Rose loved fishing.")

    response = owner_client.post(_url(conversation), {"content": "Tell me about the lake."},
                                 format="json")

    assert response.status_code == 201
    body = response.json()
    assert body["reply"] == (
        f"{OFFLINE_NOTICE} You said: “Tell me about the lake.”. I have 0 memories about you, "
        "1 fact about the person we remember and 1 note from earlier conversations. "
        "From an earlier conversation: “Rose taught the grandchildren to fish at the lake.”. "
        "One thing I know: “[hobby] Rose loved fishing. (personal)”."
    )
    assert body["tool_calls"] == [] and body["replayed"] is False
    assert body["token_counts"]["total"] <= body["token_counts"]["budget"]
    assert body["token_counts"]["retrieved"] > 0 and body["token_counts"]["facts"] > 0
    saved = list(Message.objects.filter(conversation=conversation).order_by("sequence"))
    assert [(m.sequence, m.role) for m in saved] == [(0, "user"), (1, "assistant")]
    assert saved[1].content == body["reply"]
    assert saved[1].metadata == {
        "reply_to": 0, "tool_calls": [], "provider": "extractive",
        "token_counts": body["token_counts"], "cuts": [], "warnings": [],
    }
    assert body["user_message"]["id"] == str(saved[0].pk)
    assert body["assistant_message"]["id"] == str(saved[1].pk)


def test_a_held_back_offline_write_is_told_to_the_user_as_a_question(
        family, owner_client, conversation):
    """Found by a walkthrough: the write rule's reason, written for the model ("Held back,
    nothing was written: … call the tool again."), was shown to a grieving family member."""
    response = owner_client.post(_url(conversation),
                                 {"content": "Never mention the accident again."}, format="json")
    assert response.status_code == 201
    reply = response.json()["reply"]
    assert "Held back" not in reply and "call the tool" not in reply
    assert "I haven't saved anything. If you'd like me to remember it, say" in reply
    assert not AgentMemory.objects.exists()


def test_the_same_state_gives_the_same_offline_reply(family, conversation):
    from datetime import UTC, datetime

    from agent_memory.tools import tool_definitions
    from conversations.context import build_context
    from conversations.services import message_append
    from memory_site.core.ai import get_llm

    message_append(conversation=conversation, role="user", content="Hello there")
    replies = [
        get_llm().chat(
            messages=build_context(conversation=conversation, now=datetime(2026, 1, day, tzinfo=UTC))
            .chat_messages(),
            tools=tool_definitions(),
        )
        for day in (1, 2)
    ]
    assert replies[0] == replies[1]
    assert replies[0].content.startswith(OFFLINE_NOTICE)


def test_forget_that_forgets_the_memory_it_names_and_says_so(family, owner_client,
                                                             conversation):
    """Found by an integrator walkthrough: the offline agent ignored "forget", made no call,
    and said nothing of it. It now forgets the memory the request's words name (the write rule
    allows it: the user asked), and says when it cannot tell which one is meant."""
    for content in ("Remember that Mom called every Sunday at six.",
                    "Remember that my sister Anna bakes on Sundays."):
        assert owner_client.post(_url(conversation), {"content": content},
                                 format="json").status_code == 201
    mom = next(m for m in active_memories_for_user(family.owner) if "Mom" in m.content)

    response = owner_client.post(
        _url(conversation), {"content": "Please forget that Mom called every Sunday at six."},
        format="json")

    assert response.status_code == 201
    body = response.json()
    assert [(c["name"], c["result"]["ok"]) for c in body["tool_calls"]] == [
        ("manage_user_memory", True)]
    assert body["reply"].startswith(f"Done — I've forgotten that memory [id:{mom.pk}].")
    assert [m.content for m in active_memories_for_user(family.owner)] == [
        "My sister Anna bakes on Sundays"]
    # Nothing it can tell apart: no call, and it says so.
    response = owner_client.post(_url(conversation), {"content": "Forget about the garage."},
                                 format="json")
    assert response.json()["tool_calls"] == []
    assert "nothing was forgotten" in response.json()["reply"]
    # A deletion the user turns down in the next sentence is held back, and said so.
    response = owner_client.post(
        _url(conversation),
        {"content": "Please forget that my sister Anna bakes on Sundays? Absolutely not!"},
        format="json")
    assert response.json()["reply"].startswith("I haven't forgotten anything.")
    assert len(active_memories_for_user(family.owner)) == 1
    # Grief is no request; nor is a message that reaffirms the memory, or names one word of it
    # (found by a hostile probe and a review: these deleted the memory).
    for said in ("I'll never forget my sister Anna baking.",
                 "Remove nothing, my sister Anna bakes on Sundays.",
                 "Forget it, my sister Anna bakes on Sundays.",
                 "Remove all doubt: my sister Anna bakes on Sundays.",
                 "Please remove the Sundays."):
        response = owner_client.post(_url(conversation), {"content": said}, format="json")
        assert response.json()["tool_calls"] == [], said
    assert len(active_memories_for_user(family.owner)) == 1


@pytest.mark.parametrize("said", ["Please forget Alec.", "Please delete the memory about Alec",
                                  "Please forget about Alec, my boss.",
                                  "Forget this memory about Alec being my boss"])
def test_forget_names_a_memory_by_its_subject(family, owner_client, conversation, said):
    """Found by a hostile probe: with the subject in brackets not read, and two shared words
    required, "Please forget Alec" left the memory about Alec, and said nothing of it."""
    from agent_memory.services import memory_create

    alec = memory_create(user=family.owner, content="Alec is the user's boss",
                         category="person", subject="Alec")
    memory_create(user=family.owner, content="The user likes black tea in the morning",
                  category="preference")
    response = owner_client.post(_url(conversation), {"content": said}, format="json")
    assert response.status_code == 201
    assert [(c["name"], c["result"]["ok"]) for c in response.json()["tool_calls"]] == [
        ("manage_user_memory", True)]
    assert alec.pk not in {m.pk for m in active_memories_for_user(family.owner)}
    assert len(active_memories_for_user(family.owner)) == 1


@pytest.mark.parametrize("said", ["Forget that I'm vegetarian", "Forget that I like jazz"])
def test_forget_names_a_short_memory_by_all_its_words(family, owner_client, conversation, said):
    """Found by a review: with two shared words required, a memory of one or two words could
    not be named any more."""
    from agent_memory.services import memory_create

    memory_create(user=family.owner, content="User is vegetarian", category="preference")
    memory_create(user=family.owner, content="The user likes jazz", category="preference")
    response = owner_client.post(_url(conversation), {"content": said}, format="json")
    assert [c["result"]["ok"] for c in response.json()["tool_calls"]] == [True]
    assert len(active_memories_for_user(family.owner)) == 1


def test_remember_that_calls_add_to_memory_and_the_next_turn_knows_it(family, owner_client,
                                                                      conversation):
    response = owner_client.post(
        _url(conversation), {"content": "Remember that my sister Anna bakes on Sundays."},
        format="json",
    )

    assert response.status_code == 201
    body = response.json()
    [memory] = active_memories_for_user(family.owner)
    assert memory.content == "My sister Anna bakes on Sundays"
    assert memory.category == "context"
    assert [(c["name"], c["round"], c["result"]["ok"]) for c in body["tool_calls"]] == [
        ("add_to_memory", 1, True)
    ]
    assert body["reply"] == (
        f"Noted — I'll remember that: My sister Anna bakes on Sundays [id:{memory.pk}] "
        f"{OFFLINE_NOTICE}"
    )
    roles = list(Message.objects.filter(conversation=conversation).values_list("role", flat=True))
    assert roles == ["user", "tool", "assistant"]
    assert memory.versions.get().source_conversation_id == conversation.pk

    body = owner_client.post(_url(conversation), {"content": "What do you know?"},
                             format="json").json()
    assert "I have 1 memory about you" in body["reply"]
    assert body["token_counts"]["memory"] > 0


@pytest.mark.parametrize("said, stored", [
    # Asked in the ways families ask (found by a walkthrough).
    ("Could you also remember that my sister Anna bakes on Sundays?",
     "My sister Anna bakes on Sundays"),
    ("Don't forget that my sister Anna bakes on Sundays.", "My sister Anna bakes on Sundays"),
    ("Remember: my sister Anna bakes on Sundays.", "My sister Anna bakes on Sundays"),
    ("We talked for hours about the old house and the garden. " * 60
     + "Please remember that my sister Anna bakes on Sundays.",
     "My sister Anna bakes on Sundays"),
])
def test_an_offline_turn_stores_a_request_put_another_way(family, owner_client, conversation,
                                                          said, stored):
    response = owner_client.post(_url(conversation), {"content": said}, format="json")
    assert response.status_code == 201
    [memory] = active_memories_for_user(family.owner)
    assert memory.content == stored


def test_an_offline_turn_stores_nothing_for_a_memory_shared(family, owner_client, conversation):
    owner_client.post(_url(conversation), {"content": "Remember when we went to the lake?"},
                      format="json")
    assert not active_memories_for_user(family.owner)


def test_an_assistant_reply_enqueues_summarisation(family, owner_client, conversation,
                                                   django_capture_on_commit_callbacks):
    for i in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            response = owner_client.post(
                _url(conversation), {"content": f"Rose grew roses in 19{60 + i}."}, format="json"
            )
        assert response.status_code == 201
    # Seed 002: the sixth message (sequence 5) starts the rolling summary.
    assert ConversationMemory.objects.filter(conversation=conversation).exists()
    response = owner_client.get(f"/api/ai/conversations/{conversation.pk}/context")
    assert response.json()["parts"]["rolling_summary"] is not None


def test_a_retry_with_the_same_key_answers_the_saved_reply(owner_client, conversation):
    headers = {"HTTP_IDEMPOTENCY_KEY": "turn-1"}
    first = owner_client.post(_url(conversation), {"content": "Hello"}, format="json", **headers)
    again = owner_client.post(_url(conversation), {"content": "Hello"}, format="json", **headers)

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["replayed"] is True
    assert again.json()["assistant_message"] == first.json()["assistant_message"]
    assert Message.objects.filter(conversation=conversation).count() == 2
    # The replay reports the context the saved reply was given, not null.
    assert again.json()["token_counts"] == first.json()["token_counts"]
    assert again.json()["token_counts"]["total"] > 0
    assert (again.json()["cuts"], again.json()["warnings"]) == (first.json()["cuts"],
                                                                first.json()["warnings"])


def test_a_replay_reports_the_cuts_the_saved_reply_was_given(owner_client, conversation,
                                                              settings):
    headers = {"HTTP_IDEMPOTENCY_KEY": "turn-tight"}
    long_message = "Rose kept bees behind the lake house. " * 400
    settings.CONTEXT_TOKEN_BUDGET = 1500
    first = owner_client.post(_url(conversation), {"content": long_message}, format="json",
                              **headers)
    settings.CONTEXT_TOKEN_BUDGET = 8000
    again = owner_client.post(_url(conversation), {"content": long_message}, format="json",
                              **headers)

    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["cuts"][-1]["part"] == "latest_message"
    assert again.json()["cuts"] == first.json()["cuts"]
    assert again.json()["token_counts"] == first.json()["token_counts"]
    assert again.json()["token_counts"]["budget"] == 1500


def test_a_key_reused_for_other_content_is_a_409(owner_client, conversation):
    headers = {"HTTP_IDEMPOTENCY_KEY": "turn-1"}
    owner_client.post(_url(conversation), {"content": "Hello"}, format="json", **headers)
    response = owner_client.post(_url(conversation), {"content": "Bye"}, format="json", **headers)

    assert response.status_code == 409
    assert response.json() == {
        "detail": "This Idempotency-Key was already used for another message.", "code": "conflict",
    }
    assert Message.objects.filter(conversation=conversation).count() == 2


@pytest.mark.parametrize(
    ("payload", "message"),
    [({}, "This field is required."), ({"content": "  "}, "A message needs some content."),
     ({"content": "x" * 20001}, "At most 20000 characters.")],
)
def test_bad_content_is_a_400_and_saves_nothing(owner_client, conversation, payload, message):
    response = owner_client.post(_url(conversation), payload, format="json")

    assert response.status_code == 400
    assert response.json() == {
        "detail": f"content: {message}", "code": "invalid", "errors": {"content": [message]},
    }
    assert not Message.objects.filter(conversation=conversation).exists()


def test_an_openai_turn_is_a_function_calling_round_trip(family, owner_client, conversation,
                                                         openai_llm):
    openai_llm.chat_tool_calls([
        ("add_to_memory", {"content": "Anna is the user's sister", "category": "person",
                           "subject": "Anna"}),
    ])
    openai_llm.chat_text("I'll remember that Anna is your sister.")

    response = owner_client.post(_url(conversation), {"content": "Anna is my sister, remember it"},
                                 format="json")

    assert response.status_code == 201
    body = response.json()
    assert body["reply"] == "I'll remember that Anna is your sister."
    memory = AgentMemory.objects.get(user=family.owner)
    assert memory.subject == "Anna"
    first, second = openai_llm.calls("chat")
    assert {t["function"]["name"] for t in first.body["tools"]} >= {"add_to_memory",
                                                                    "update_memory"}
    assert first.messages[0]["role"] == "system"
    assert "You are a warm, patient companion" in first.messages[0]["content"]
    assert first.messages[-1] == {"role": "user", "content": "Anna is my sister, remember it"}
    call_message, tool_message = second.messages[-2:]
    assert call_message["role"] == "assistant"
    assert call_message["tool_calls"][0]["id"] == "call_0"
    assert call_message["tool_calls"][0]["function"]["name"] == "add_to_memory"
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_0"
    assert json.loads(tool_message["content"])["result"]["memory_id"] == memory.pk
    assert [(c["id"], c["name"]) for c in body["tool_calls"]] == [("call_0", "add_to_memory")]


def test_tool_rounds_are_bounded(owner_client, conversation, openai_llm, settings):
    settings.TURN_MAX_TOOL_ROUNDS = 2
    for _ in range(4):
        openai_llm.chat_tool_calls([("manage_user_memory", {"operation": "get_memory"})])
    openai_llm.chat_text("Done looking.")

    response = owner_client.post(_url(conversation), {"content": "Look everything up"},
                                 format="json")

    assert response.status_code == 201
    calls = openai_llm.calls("chat")
    assert len(calls) == 3
    assert "tools" in calls[0].body and "tools" in calls[1].body and "tools" not in calls[2].body
    assert [c["round"] for c in response.json()["tool_calls"]] == [1, 2]
    # The third answer was a tool call again; with no rounds left it is saved as the reply text.
    assert Message.objects.filter(conversation=conversation, role="tool").count() == 2


def test_a_provider_failure_keeps_the_user_message_and_a_retry_does_not_duplicate_it(
    family, owner_client, conversation, openai_llm
):
    openai_llm.chat_tool_calls([
        ("add_to_memory", {"content": "Anna is the user's sister", "category": "person",
                           "subject": "Anna"}),
    ])
    openai_llm.error(500)
    headers = {"HTTP_IDEMPOTENCY_KEY": "k-42"}

    failed = owner_client.post(_url(conversation), {"content": "Remember: Anna is my sister"},
                               format="json", **headers)

    assert failed.status_code == 502
    assert failed.json()["code"] == "provider_error"
    assert "Your message was saved as #0" in failed.json()["detail"]
    assert list(Message.objects.filter(conversation=conversation).values_list("role", flat=True)) \
        == ["user", "tool"]

    openai_llm.chat_text("Got it, Anna is your sister.")
    retried = owner_client.post(_url(conversation), {"content": "Remember: Anna is my sister"},
                                format="json", **headers)

    assert retried.status_code == 201
    assert retried.json()["reply"] == "Got it, Anna is your sister."
    assert list(Message.objects.filter(conversation=conversation).values_list("role", flat=True)) \
        == ["user", "tool", "assistant"]
    # The tool call made before the failure was replayed, not run again.
    assert AgentMemory.objects.filter(user=family.owner).count() == 1
    last = openai_llm.calls("chat")[-1]
    assert [m["role"] for m in last.messages[-3:]] == ["user", "assistant", "tool"]


def test_a_reply_in_text_parts_is_joined(owner_client, conversation, openai_llm):
    openai_llm.chat_message({"role": "assistant", "content": [
        {"type": "text", "text": "Anna is "}, {"type": "text", "text": "your sister."},
    ]})

    response = owner_client.post(_url(conversation), {"content": "Who is Anna?"}, format="json")

    assert response.status_code == 201
    assert response.json()["reply"] == "Anna is your sister."
    assert Message.objects.get(conversation=conversation, role="assistant").content \
        == "Anna is your sister."


def _tool_call(call_id, name, arguments):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}},
    ]}


@pytest.mark.parametrize("message", [
    {"role": "assistant", "content": 42},
    {"role": "assistant", "content": {"text": "Hello"}},
    {"role": "assistant", "content": [{"type": "text", "text": 7}]},
    _tool_call(None, "add_to_memory", json.dumps({"content": "Anna is the user's sister"})),
    _tool_call("call_0", None, json.dumps({"content": "Anna is the user's sister"})),
    _tool_call("call_0", "add_to_memory", 42),
    _tool_call("", "add_to_memory", "{}"),
    _tool_call("call_0", "", "{}"),
], ids=["int content", "object content", "int text part", "null call id", "null tool name",
        "int arguments", "empty call id", "empty tool name"])
def test_a_malformed_chat_answer_is_a_provider_error_and_the_retry_is_safe(
    family, owner_client, conversation, openai_llm, message
):
    openai_llm.chat_message(message)
    headers = {"HTTP_IDEMPOTENCY_KEY": "k-7"}

    failed = owner_client.post(_url(conversation), {"content": "Anna is my sister"},
                               format="json", **headers)

    assert failed.status_code == 502
    assert failed.json()["code"] == "provider_error"
    assert "Your message was saved as #0" in failed.json()["detail"]
    assert list(Message.objects.filter(conversation=conversation).values_list("role", flat=True)) \
        == ["user"]
    assert not AgentMemory.objects.filter(user=family.owner).exists()

    openai_llm.chat_text("Tell me about Anna.")
    retried = owner_client.post(_url(conversation), {"content": "Anna is my sister"},
                                format="json", **headers)

    assert retried.status_code == 201
    assert list(Message.objects.filter(conversation=conversation).values_list("role", flat=True)) \
        == ["user", "assistant"]


def test_tool_call_arguments_sent_as_an_object_are_used(family, owner_client, conversation,
                                                        openai_llm):
    arguments = {"content": "Anna is the user's sister", "category": "person", "subject": "Anna"}
    openai_llm.chat_message(_tool_call("call_0", "add_to_memory", arguments),
                            finish_reason="tool_calls")
    openai_llm.chat_text("I'll remember that Anna is your sister.")

    response = owner_client.post(_url(conversation), {"content": "Remember: Anna is my sister"},
                                 format="json")

    assert response.status_code == 201
    assert AgentMemory.objects.get(user=family.owner).subject == "Anna"
    tool = Message.objects.get(conversation=conversation, role="tool")
    assert json.loads(tool.metadata["arguments"]) == arguments
    replayed = openai_llm.calls("chat")[1].messages[-2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(replayed) == arguments


@pytest.mark.parametrize("who", ["anon", "stranger", "other_member", "member"])
def test_only_the_owner_of_the_conversation_may_run_a_turn(family, conversation, who):
    client = api_client_for(None if who == "anon" else getattr(family, who))

    response = client.post(_url(conversation), {"content": "Hello"}, format="json")

    if who == "anon":
        assert response.status_code == 401
    else:
        assert response.status_code == 404
        assert response.json() == {"detail": "Not found.", "code": "not_found"}
    assert not Message.objects.filter(conversation=conversation).exists()


def test_the_token_budget_never_evicts_what_the_same_turn_added(
    family, owner_client, conversation, openai_llm, settings
):
    settings.MEMORY_TOKEN_LIMIT = 1  # every add is over budget: only protection keeps a memory
    openai_llm.chat_tool_calls([("add_to_memory", {
        "content": "Rose's sister is Margaret", "category": "person", "subject": "Margaret"})])
    openai_llm.chat_tool_calls([("add_to_memory", {
        "content": "Rose grew dahlias for the county show", "category": "context"})])
    openai_llm.chat_text("I'll remember both.")

    response = owner_client.post(
        _url(conversation),
        {"content": "Remember that Rose's sister is Margaret and Rose grew dahlias for the "
                    "county show"},
        format="json",
    )

    assert response.status_code == 201
    assert [c["result"]["ok"] for c in response.json()["tool_calls"]] == [True, True]
    remembered = {m.subject or m.category for m in active_memories_for_user(family.owner)}
    assert remembered == {"Margaret", "context"}


def test_a_tool_call_with_a_raw_nul_character_is_stored_without_it(
    owner_client, conversation, openai_llm
):
    message = {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_\x000", "type": "function",
        "function": {"name": "manage_user_memory", "arguments": '{"operation":\x00 "get_memory"}'},
    }]}
    openai_llm.raw(json.dumps({
        "id": "chatcmpl-nul", "object": "chat.completion", "created": 0, "model": "test",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }))
    openai_llm.chat_text("Here is what I remember.")

    response = owner_client.post(_url(conversation), {"content": "What do you remember?"},
                                 format="json")

    assert response.status_code == 201
    [call] = response.json()["tool_calls"]
    assert (call["id"], call["name"], call["result"]["ok"]) == ("call_0", "manage_user_memory",
                                                                True)
    tool_message = Message.objects.get(conversation=conversation, role="tool")
    assert tool_message.metadata["arguments"] == '{"operation": "get_memory"}'


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
                url, {"content": "Remember: Anna is my sister"}, format="json", **headers
            )
        finally:
            connections.close_all()

    thread = threading.Thread(target=send_first)
    thread.start()
    deadline = time.monotonic() + 10
    while not openai_llm.calls("chat") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(openai_llm.calls("chat")) == 1, "the first request never reached the model"

    retry = api_client_for(family.owner).post(url, {"content": "Remember: Anna is my sister"},
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

    done = api_client_for(family.owner).post(url, {"content": "Remember: Anna is my sister"},
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
        turn_run(conversation=conversation, content="Remember: Anna is my sister", idempotency_key="k-7")

    assert not AgentMemory.objects.filter(user=family.owner).exists()
    assert _roles(conversation) == ["user"]

    monkeypatch.undo()
    openai_llm.chat_tool_calls([("add_to_memory", ANNA)])
    openai_llm.chat_text("Got it.")
    result = turn_run(conversation=conversation, content="Remember: Anna is my sister",
                      idempotency_key="k-7")

    assert result.assistant_message.content == "Got it."
    assert [c["result"]["ok"] for c in result.tool_calls] == [True]
    assert AgentMemory.objects.filter(user=family.owner).count() == 1
    assert _roles(conversation) == ["user", "tool", "assistant"]
