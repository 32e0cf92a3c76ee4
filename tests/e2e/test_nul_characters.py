"""A NUL character in user-written text is a 400 or an inline error, never a 500, and nothing is
written: PostgreSQL text cannot hold one, so every service refuses it first."""

import json

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from agent_memory import services as memory_services
from agent_memory.memory_command import command_run
from agent_memory.models import AgentMemory, AgentMemoryVersion, Place, PlaceMention
from conversations import services as conversation_services
from conversations.models import Conversation, Message
from conversations.retrieval import validate_search_input
from conversations.services.turn import turn_run
from facts import services as fact_services
from facts.models import Legacy, LegacyFact, LegacyMembership
from memory_site.core.text import NUL_MESSAGE
from tests.factories import ConversationFactory, LegacyFactFactory, UserFactory

pytestmark = pytest.mark.django_db

NUL = "Rose\x00 loved the lake"


def _rows() -> tuple[int, ...]:
    return tuple(model.objects.count() for model in (
        Legacy, LegacyMembership, LegacyFact, Conversation, Message, AgentMemory,
        AgentMemoryVersion, Place, PlaceMention,
    ))


@pytest.fixture
def conversation(family):
    return ConversationFactory(user=family.owner, legacy=family.legacy)


@pytest.fixture
def fact(family):
    return LegacyFactFactory(legacy=family.legacy, user=family.owner, content="Rose loved tea.")


@pytest.fixture
def memory(family):
    return memory_services.memory_create(user=family.owner, content="Likes tea",
                                         category="preference")


def _service_calls(family, conversation, fact, memory):
    owner, legacy = family.owner, family.legacy
    UserFactory(username="alec")
    return {
        "title": lambda: conversation_services.conversation_create(
            user=owner, legacy=legacy, title=NUL),
        "persona": lambda: conversation_services.conversation_create(
            user=owner, legacy=legacy, persona=NUL),
        "content": lambda: conversation_services.message_append(
            conversation=conversation, role="user", content=NUL),
        "name": lambda: fact_services.legacy_create(user=owner, name=NUL),
        "username": lambda: fact_services.legacy_member_add(
            legacy=legacy, added_by=owner, username="alec\x00", role="member"),
        "fact content": lambda: fact_services.fact_create(
            legacy=legacy, user=owner, category="hobby", content=NUL),
        "fact edit": lambda: fact_services.fact_update(fact=fact, user=owner, content=NUL),
        "memory content": lambda: memory_services.memory_create(
            user=owner, content=NUL, category="preference"),
        "subject": lambda: memory_services.memory_create(
            user=owner, content="Likes coffee", category="preference", subject="Al\x00ec"),
        "memory update": lambda: memory_services.memory_update(
            user=owner, memory=memory, content=NUL),
        "place_id": lambda: memory_services.place_add(user=owner, place_id="lake\x00",
                                                      name="Lake"),
        "place_name": lambda: memory_services.place_add(user=owner, place_id="lake", name=NUL),
        "notes": lambda: memory_services.place_add(user=owner, place_id="lake", name="Lake",
                                                   notes=NUL),
        "q": lambda: validate_search_input(query=NUL, k=None),
        "turn": lambda: turn_run(conversation=conversation, content=NUL),
    }


FIELDS = {
    "title": "title", "persona": "persona", "content": "content", "name": "name",
    "username": "username", "fact content": "content", "fact edit": "content",
    "memory content": "content", "subject": "subject", "memory update": "content",
    "place_id": "place_id", "place_name": "place_name", "notes": "notes", "q": "q",
    "turn": "content",
}


@pytest.mark.parametrize("case", list(FIELDS))
def test_every_service_refuses_nul_with_a_field_error_and_writes_nothing(
    family, conversation, fact, memory, case
):
    call = _service_calls(family, conversation, fact, memory)[case]
    before = _rows()
    with pytest.raises(ValidationError) as raised:
        call()
    assert raised.value.message_dict == {FIELDS[case]: [NUL_MESSAGE]}
    assert _rows() == before
    fact.refresh_from_db()
    assert fact.content == "Rose loved tea."


# --- The API --------------------------------------------------------------------------------


def test_search_with_nul_in_q_is_a_400(family, owner_client):
    response = owner_client.get(f"/api/ai/legacies/{family.legacy.pk}/search", {"q": "a\x00b"})
    assert response.status_code == 400
    assert response.json() == {
        "detail": f"q: {NUL_MESSAGE}", "code": "invalid", "errors": {"q": [NUL_MESSAGE]},
    }


def test_search_with_percent_00_in_the_url_is_a_400(family, owner_client):
    response = owner_client.get(f"/api/ai/legacies/{family.legacy.pk}/search?q=a%00b")
    assert response.status_code == 400
    assert response.json()["errors"] == {"q": [NUL_MESSAGE]}


@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_a_memory_id_with_nul_is_a_404(family, owner_client, memory, method):
    before = _rows()
    response = getattr(owner_client, method)("/api/memory/a%00b", {"content": "Likes coffee"},
                                              format="json")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found.", "code": "not_found"}
    assert _rows() == before


@pytest.mark.parametrize("name, arguments, field", [
    ("add_to_memory", {"content": NUL, "category": "preference"}, "content"),
    ("add_to_memory", {"content": "Likes tea a lot", "category": "preference",
                       "subject": "Al\x00ec"}, "subject"),
    ("add_to_memory", '{"content": "Likes a\\u0000b", "category": "preference"}', "content"),
    ("manage_user_memory", {"operation": "add_fact", "content": NUL}, "content"),
    ("manage_user_memory", {"operation": "add_poi", "place_id": "lake\x00",
                            "place_name": "Lake"}, "place_id"),
    ("manage_user_memory", {"operation": "add_poi", "place_id": "lake",
                            "place_name": NUL}, "place_name"),
    ("manage_user_memory", {"operation": "add_poi", "place_id": "lake", "place_name": "Lake",
                            "notes": NUL}, "notes"),
])
def test_a_tool_call_with_nul_is_invalid_arguments(family, owner_client, memory, name,
                                                    arguments, field):
    before = _rows()
    response = owner_client.post(f"/api/tools/{name}", {"arguments": arguments}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "ok": False, "code": "invalid_arguments", "detail": f"{field}: {NUL_MESSAGE}",
        "errors": {field: [NUL_MESSAGE]},
    }
    assert _rows() == before


def test_update_memory_with_nul_content_is_invalid_arguments(family, owner_client, memory):
    before = _rows()
    response = owner_client.post("/api/tools/update_memory", {
        "arguments": {"memory_id": memory.pk, "content": NUL},
    }, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {"content": [NUL_MESSAGE]}
    assert _rows() == before


@pytest.mark.parametrize("name, arguments, detail", [
    ("update_memory", {"memory_id": "ab\x00cdefg", "content": "Likes coffee"},
     "No active memory with id 'ab\\x00cdefg'."),
    ("manage_user_memory", {"operation": "deactivate_fact", "fact_id": "ab\x00cdefg"},
     "No active fact with id 'ab\\x00cdefg'."),
])
def test_a_memory_id_with_nul_in_a_tool_call_is_not_found(family, owner_client, memory, name,
                                                          arguments, detail):
    before = _rows()
    response = owner_client.post(f"/api/tools/{name}", {"arguments": arguments}, format="json")
    assert response.status_code == 404
    assert response.json() == {"ok": False, "code": "not_found", "detail": detail}
    assert _rows() == before


def test_a_memory_command_with_nul_in_the_id_says_there_is_no_such_memory(family, memory):
    before = _rows()
    reply = command_run(user=family.owner, text="/memory delete ab\x00cdefg")
    assert (reply.status, reply.code) == (404, "not_found")
    assert reply.reply == "I have no memory with id 'ab\x00cdefg'. Use /memory to see the ids."
    assert _rows() == before


# --- Tool calls the model makes during a turn -------------------------------------------------


def test_tool_calls_with_nul_in_a_turn_are_refused_and_the_turn_goes_on(
    family, owner_client, conversation, openai_llm
):
    openai_llm.chat_tool_calls([
        ("add_to_memory", {"content": NUL, "category": "person"}),
        ("manage_user_memory", {"operation": "add_poi", "place_id": "lake",
                                "place_name": "Lake", "notes": NUL}),
    ])
    openai_llm.chat_text("I could not store that.")
    # The user asks for both (agent_memory.write_rule), so only the NUL refuses them.
    response = owner_client.post(f"/api/ai/conversations/{conversation.pk}/turn",
                                 {"content": "Remember that Rose loved the lake, and note the "
                                             "lake as a place."}, format="json")

    assert response.status_code == 201
    results = [call["result"] for call in response.json()["tool_calls"]]
    assert results == [
        {"ok": False, "code": "invalid_arguments", "detail": f"content: {NUL_MESSAGE}",
         "errors": {"content": [NUL_MESSAGE]}},
        {"ok": False, "code": "invalid_arguments", "detail": f"notes: {NUL_MESSAGE}",
         "errors": {"notes": [NUL_MESSAGE]}},
    ]
    assert not AgentMemory.objects.exists() and not Place.objects.exists()
    assert list(conversation.messages.order_by("sequence").values_list("role", flat=True)) == [
        "user", "tool", "tool", "assistant",
    ]
    assert json.loads(conversation.messages.get(sequence=1).content)["ok"] is False


def test_a_model_reply_with_nul_is_saved_without_it(owner_client, conversation, openai_llm):
    openai_llm.chat_text("Rose\x00 loved the lake.")
    response = owner_client.post(f"/api/ai/conversations/{conversation.pk}/turn",
                                 {"content": "Tell me about Rose."}, format="json")
    assert response.status_code == 201
    reply = conversation.messages.get(role="assistant")
    assert reply.content == "Rose loved the lake."
    assert response.json()["assistant_message"]["content"] == "Rose loved the lake."


# --- The dashboard ----------------------------------------------------------------------------


@pytest.fixture
def browser(family) -> Client:
    client = Client()
    client.force_login(family.owner)
    return client


ERROR_LINE = f'<p class="error" role="alert">{NUL_MESSAGE}</p>'


def test_adding_a_fact_with_nul_is_an_inline_error(family, browser):
    before = _rows()
    response = browser.post(f"/legacies/{family.legacy.pk}/facts/add",
                            {"category": "hobby", "content": NUL})
    assert response.status_code == 400
    assert ERROR_LINE in response.content.decode()
    assert _rows() == before


@pytest.mark.parametrize("htmx, status", [(False, 400), (True, 200)])
def test_editing_a_fact_with_nul_is_an_inline_error(family, browser, fact, htmx, status):
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    response = browser.post(f"/facts/{fact.pk}/edit", {"category": "hobby", "content": NUL},
                            **headers)
    assert response.status_code == status
    assert ERROR_LINE in response.content.decode()
    fact.refresh_from_db()
    assert fact.content == "Rose loved tea."


@pytest.mark.parametrize("htmx", [False, True])
def test_the_facts_filter_with_nul_shows_every_fact_and_says_why(family, browser, fact, htmx):
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    response = browser.get(f"/legacies/{family.legacy.pk}/facts", {"q": "a\x00b"}, **headers)
    assert response.status_code == 200
    body = response.content.decode()
    assert (f'<p class="error" role="alert">Search text: {NUL_MESSAGE} Showing every fact.</p>'
            in body)
    assert "Rose loved tea." in body


def test_starting_a_chat_with_nul_in_the_title_is_an_error(family, browser):
    before = _rows()
    response = browser.post("/chat/start", {"legacy_id": family.legacy.pk, "title": NUL})
    assert response.status_code == 302
    assert response["Location"] == f"/chat?legacy={family.legacy.pk}"
    assert NUL_MESSAGE in browser.get(response["Location"]).content.decode()
    assert _rows() == before


def test_sending_a_chat_message_with_nul_is_an_error_in_place(family, browser, conversation):
    before = _rows()
    response = browser.post(f"/chat/{conversation.pk}/send", {"content": NUL},
                            HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert ERROR_LINE in response.content.decode()
    plain = browser.post(f"/chat/{conversation.pk}/send", {"content": NUL})
    assert plain.status_code == 302
    assert NUL_MESSAGE in browser.get(plain["Location"]).content.decode()
    assert _rows() == before


def test_a_memory_page_with_nul_in_the_id_is_a_404(family, browser, memory):
    before = _rows()
    assert browser.get("/memories/a%00b").status_code == 404
    assert browser.post("/memories/a%00b/delete").status_code == 404
    assert _rows() == before
