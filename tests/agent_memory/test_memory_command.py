"""The /memory command (seed 003 scenarios 5 and 6): through POST /api/commands, and typed in a
conversation — the chat page (htmx and without JavaScript) and the turn API run the command
straight: no message saved, no model call, no summarisation."""

import pytest
import yaml
from django.test import Client

from agent_memory import services
from agent_memory.memory_command import USAGE
from agent_memory.models import AgentMemory
from agent_memory.services import memory_create
from conversations.models import ConversationMemory, Message
from conversations.services import message_append
from tests.conftest import api_client_for
from tests.factories import ConversationFactory, UserFactory
from tests.support.schema import assert_documented, documented_schema, key_problems

pytestmark = pytest.mark.django_db

LIST_REPLY = (
    "📝 Your memories:\n\n**Person**\n• [{alec}] Alec is the user's brother\n\n"
    "Use /memory delete <id> to remove a memory."
)


@pytest.fixture
def llm(settings, openai_server):
    """A model that records every call: a command must make none."""
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = openai_server.base_url
    settings.LLM_MAX_RETRIES = 0
    settings.LLM_TIMEOUT_SECONDS = 5
    return openai_server


@pytest.fixture
def conversation(family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    message_append(conversation=conversation, role="user", content="Rose loved the lake.")
    message_append(conversation=conversation, role="assistant",
                   content="Tell me more about the lake.")
    return conversation


@pytest.fixture
def alec(family) -> AgentMemory:
    return memory_create(user=family.owner, content="Alec is the user's brother",
                         category="person", subject="Alec")


@pytest.fixture
def browser(family) -> Client:
    client = Client()
    client.force_login(family.owner)
    return client


def _log(conversation) -> list[tuple[int, str, str]]:
    return list(
        Message.objects.filter(conversation=conversation)
        .order_by("sequence").values_list("sequence", "role", "content")
    )


def _reply_html(text: str) -> str:
    return text.replace("'", "&#x27;").replace("<", "&lt;").replace(">", "&gt;").replace(
        "\n", "<br>"
    )


def test_memory_with_htmx_shows_the_list_in_the_conversation_and_saves_nothing(
    family, browser, conversation, alec, llm
):
    before = _log(conversation)
    response = browser.post(f"/chat/{conversation.pk}/send", {"content": "/memory"},
                            HTTP_HX_REQUEST="true")

    assert response.status_code == 200
    body = response.content.decode()
    assert "<html" not in body and 'class="chat-layout"' in body
    assert '<li class="chat-message user command" id="chat-command">' in body
    assert "<p><code>/memory</code></p>" in body
    assert _reply_html(LIST_REPLY.format(alec=alec.pk)) in body
    assert "not saved in this conversation" in body
    # The transcript is still there, above the command.
    assert body.index("Tell me more about the lake.") < body.index('id="chat-command"')
    assert _log(conversation) == before
    assert llm.requests == []
    assert not ConversationMemory.objects.filter(conversation=conversation).exists()
    conversation.refresh_from_db()
    assert conversation.message_count == 2
    # The context beside it is the next reply's: the command was not a turn.
    assert "Context of the next reply" in body


def test_memory_delete_without_javascript_redirects_and_shows_the_reply_once(
    family, browser, conversation, alec, llm
):
    before = _log(conversation)
    response = browser.post(f"/chat/{conversation.pk}/send",
                            {"content": f"/memory delete {alec.pk}", "idempotency_key": "k1"})

    assert response.status_code == 302
    assert response["Location"] == f"/chat/{conversation.pk}"
    alec.refresh_from_db()
    assert alec.deleted_at is not None
    page = browser.get(response["Location"]).content.decode()
    assert f"<p><code>/memory delete {alec.pk}</code></p>" in page
    assert "Deleted: &#x27;Alec is the user&#x27;s brother&#x27;" in page
    assert _log(conversation) == before
    assert llm.requests == []
    # Shown once: the next view of the conversation is the transcript alone.
    again = browser.get(f"/chat/{conversation.pk}").content.decode()
    assert 'id="chat-command"' not in again and "Deleted:" not in again
    assert "Tell me more about the lake." in again


@pytest.mark.parametrize(
    ("text", "reply"),
    [
        ("/memory forget everything", f"I don't know that /memory command.\n\n{USAGE}"),
        ("/memory delete zzzzzzzz", "I have no memory with id 'zzzzzzzz'. Use /memory to see "
         "the ids."),
        ("  /MEMORY   list ", LIST_REPLY),
    ],
)
def test_every_memory_command_is_answered_in_place(family, browser, conversation, alec, llm,
                                                   text, reply):
    response = browser.post(f"/chat/{conversation.pk}/send", {"content": text},
                            HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert _reply_html(reply.format(alec=alec.pk)) in response.content.decode()
    assert len(_log(conversation)) == 2
    assert AgentMemory.objects.filter(deleted_at__isnull=True).count() == 1
    assert llm.requests == []


def test_a_message_that_only_mentions_memory_goes_to_the_agent(family, browser, conversation):
    response = browser.post(f"/chat/{conversation.pk}/send",
                            {"content": "What is /memory for?"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert 'id="chat-command"' not in response.content.decode()
    assert [role for _, role, _ in _log(conversation)] == ["user", "assistant"] * 2


@pytest.mark.parametrize("who", ["member", "stranger"])
def test_memory_in_someone_elses_conversation_is_a_404_and_changes_nothing(
    family, conversation, who
):
    user = getattr(family, who)
    theirs = memory_create(user=user, content="Their own memory", category="context")
    client = Client()
    client.force_login(user)
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        response = client.post(f"/chat/{conversation.pk}/send",
                               {"content": f"/memory delete {theirs.pk}"}, **headers)
        assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.deleted_at is None
    assert len(_log(conversation)) == 2
    api = api_client_for(user).post(f"/api/ai/conversations/{conversation.pk}/turn",
                                    {"content": f"/memory delete {theirs.pk}"}, format="json")
    assert api.status_code == 404
    theirs.refresh_from_db()
    assert theirs.deleted_at is None


def _turn(client, conversation, content: str):
    return client.post(f"/api/ai/conversations/{conversation.pk}/turn", {"content": content},
                       format="json", HTTP_IDEMPOTENCY_KEY="cmd-1")


def _command_answer(reply: str, code: str) -> dict:
    return {
        "reply": reply, "user_message": None, "assistant_message": None, "tool_calls": [],
        "token_counts": None, "cuts": [], "warnings": [], "replayed": False,
        "command": True, "command_code": code,
    }


def test_the_turn_api_answers_memory_as_a_command(family, owner_client, conversation, alec, llm):
    before = _log(conversation)
    listed = _turn(owner_client, conversation, "/memory")
    assert listed.status_code == 200
    assert listed.json() == _command_answer(LIST_REPLY.format(alec=alec.pk), "ok")

    unknown = _turn(owner_client, conversation, "/memory delete zzzzzzzz")
    assert unknown.status_code == 200
    assert unknown.json() == _command_answer(
        "I have no memory with id 'zzzzzzzz'. Use /memory to see the ids.", "not_found"
    )

    deleted = _turn(owner_client, conversation, f"/memory delete {alec.pk}")
    assert deleted.status_code == 200
    assert deleted.json() == _command_answer("Deleted: 'Alec is the user's brother'", "ok")
    alec.refresh_from_db()
    assert alec.deleted_at is not None

    assert _log(conversation) == before
    assert llm.requests == []
    assert not ConversationMemory.objects.filter(conversation=conversation).exists()


def test_the_command_answer_and_an_agent_turn_are_documented(family, owner_client, conversation):
    spec = yaml.safe_load(owner_client.get("/api/schema").content)
    path = "/api/ai/conversations/{conversation_id}/turn"
    command = _turn(owner_client, conversation, "/memory delete")
    assert command.status_code == 200
    body = command.json()
    assert body["command"] is True and body["command_code"] == "invalid"
    schema = documented_schema(spec, path, "post", 200)
    assert key_problems(body, schema, spec) == []
    # drf-spectacular documents a nullable object as allOf + nullable (as for the packet's
    # rolling_summary), which the strict OAS 3.0.3 validator reads as not nullable.
    properties = spec["components"]["schemas"]["TurnResponse"]["properties"]
    assert properties["user_message"]["nullable"] is True
    assert properties["assistant_message"]["nullable"] is True
    assert properties["token_counts"]["nullable"] is True

    turn = owner_client.post(f"/api/ai/conversations/{conversation.pk}/turn",
                             {"content": "Rose loved the lake in June."}, format="json")
    assert turn.status_code == 201
    body = assert_documented(turn, spec, path, "post")
    assert body["command"] is False and body["command_code"] is None
    assert len(_log(conversation)) == 4


def test_a_memory_command_with_a_key_already_used_for_a_message_is_a_409(
    family, owner_client, conversation, alec, llm
):
    message_append(conversation=conversation, role="user", content="Hello",
                   idempotency_key="key-1")
    before = _log(conversation)
    response = owner_client.post(
        f"/api/ai/conversations/{conversation.pk}/turn", {"content": f"/memory delete {alec.pk}"},
        format="json", HTTP_IDEMPOTENCY_KEY="key-1",
    )
    assert response.status_code == 409
    assert response.json() == {
        "detail": "This Idempotency-Key was already used for another message.", "code": "conflict",
    }
    alec.refresh_from_db()
    assert alec.deleted_at is None
    assert _log(conversation) == before
    # A fresh key is fine: commands are not recorded, so it does not replay anything either.
    fresh = owner_client.post(
        f"/api/ai/conversations/{conversation.pk}/turn", {"content": "/memory"},
        format="json", HTTP_IDEMPOTENCY_KEY="key-2",
    )
    assert fresh.status_code == 200 and fresh.json()["command"] is True


USAGE = (
    "Usage:\n"
    "/memory or /memory list — show what I remember about you\n"
    "/memory delete <id> — forget one memory (the id is shown in the list)"
)




@pytest.fixture
def memories(alice):
    alec = services.memory_create(user=alice, content="Alec is the user's boss",
                                  category="person", subject="Alec")
    sarah = services.memory_create(user=alice, content="Sarah works on the Design team",
                                   category="person", subject="Sarah")
    thursday = services.memory_create(user=alice, content="User prefers Thursday due dates",
                                      category="preference")
    return alec, sarah, thursday


def _command(client, text):
    return client.post("/api/commands", {"text": text}, format="json")


def test_memory_lists_by_category_with_ids(client, memories):
    alec, sarah, thursday = memories
    expected = (
        "📝 Your memories:\n\n"
        "**Person**\n"
        f"• [{alec.pk}] Alec is the user's boss\n"
        f"• [{sarah.pk}] Sarah works on the Design team\n\n"
        "**Preference**\n"
        f"• [{thursday.pk}] User prefers Thursday due dates\n\n"
        "Use /memory delete <id> to remove a memory."
    )
    for text in ("/memory", "/memory list", "  /memory   list "):
        response = _command(client, text)
        assert response.status_code == 200
        assert response.json() == {"reply": expected}


def test_a_text_longer_than_a_command_is_a_400_that_echoes_nothing(client):
    """Found by a hostile relative: ten million characters came back twice in a 404."""
    response = _command(client, "/memory delete " + "a" * 5000)
    assert response.status_code == 400
    assert len(response.content) < 500
    assert response.json()["errors"]["text"]


def test_memory_with_nothing_stored(client):
    response = _command(client, "/memory")
    assert response.status_code == 200
    assert response.json()["reply"].startswith("📝 You have no memories yet.")


def test_memory_delete_answers_with_the_content(client, alice, memories):
    thursday = memories[2]
    response = _command(client, f"/memory delete {thursday.pk}")
    assert response.status_code == 200
    assert response.json() == {"reply": "Deleted: 'User prefers Thursday due dates'"}
    thursday.refresh_from_db()
    assert thursday.deleted_at is not None
    assert "Thursday" not in _command(client, "/memory").json()["reply"]


def test_memory_delete_of_an_unknown_or_foreign_id_is_a_404_reply(client, memories):
    bob = UserFactory(username="bob")
    theirs = services.memory_create(user=bob, content="Bob's own memory", category="context")
    for memory_id in ("zzzzzzzz", theirs.pk):
        response = _command(client, f"/memory delete {memory_id}")
        assert response.status_code == 404
        reply = f"I have no memory with id '{memory_id}'. Use /memory to see the ids."
        assert response.json() == {"reply": reply, "detail": reply, "code": "not_found"}
    assert AgentMemory.objects.filter(deleted_at__isnull=False).count() == 0


@pytest.mark.parametrize(
    ("text", "first_line", "code"),
    [
        ("/memory delete", "Which memory? Give its id, e.g. /memory delete a1b2c3d4.", "invalid"),
        ("/memory delete a b", "Which memory? Give its id, e.g. /memory delete a1b2c3d4.",
         "invalid"),
        ("/memory forget all", "I don't know that /memory command.", "invalid"),
        ("/remember this", "I don't know that command.", "unknown_command"),
        ("hello", "I don't know that command.", "unknown_command"),
        ("", "I don't know that command.", "unknown_command"),
    ],
)
def test_anything_else_gets_the_usage_and_nothing_changes(client, memories, text, first_line,
                                                          code):
    response = _command(client, text)
    assert response.status_code == 400
    reply = f"{first_line}\n\n{USAGE}"
    assert response.json() == {"reply": reply, "detail": reply, "code": code}
    assert AgentMemory.objects.filter(deleted_at__isnull=True).count() == 3


def test_a_body_without_text_is_a_400(client):
    response = client.post("/api/commands", {}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {"text": ["This field is required."]}
