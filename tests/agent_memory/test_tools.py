"""The memory tools: definitions at /api/tools, execution as the caller, structured errors."""

import json

import pytest
import yaml

from agent_memory import tools
from agent_memory.models import AgentMemory, AgentMemoryVersion, Place, PlaceMention
from tests.factories import ConversationFactory, MessageFactory, UserFactory
from tests.support.schema import assert_documented

pytestmark = pytest.mark.django_db




def _rows():
    return (AgentMemory.objects.count(), AgentMemoryVersion.objects.count(),
            Place.objects.count(), PlaceMention.objects.count())


def _call(client, name, arguments=None, **extra):
    body = {"arguments": arguments, **extra} if arguments is not None else extra
    return client.post(f"/api/tools/{name}", body, format="json")


def test_the_tools_are_openai_function_definitions(client):
    response = client.get("/api/tools")
    assert response.status_code == 200
    body = response.json()
    assert body["total"] == 3
    assert [t["function"]["name"] for t in body["tools"]] == [
        "add_to_memory", "update_memory", "manage_user_memory",
    ]
    assert body["tools"] == tools.tool_definitions()
    add, update, manage = body["tools"]
    assert all(t["type"] == "function" for t in body["tools"])
    assert add["function"]["description"].startswith("Store important information for future")
    assert add["function"]["parameters"]["required"] == ["content", "category"]
    assert add["function"]["parameters"]["properties"]["category"]["enum"] == [
        "person", "preference", "context", "project",
    ]
    assert add["function"]["parameters"]["properties"]["content"]["minLength"] == 5
    assert add["function"]["parameters"]["properties"]["content"]["maxLength"] == 500
    assert update["function"]["parameters"]["required"] == ["memory_id", "content"]
    assert update["function"]["description"].startswith("Update an existing memory")
    assert manage["function"]["parameters"]["properties"]["operation"]["enum"] == [
        "add_fact", "deactivate_fact", "add_poi", "get_memory",
    ]
    assert "WHEN TO USE:" in manage["function"]["description"]


def test_the_same_text_added_twice_is_one_memory(client, alice):
    """Found by a walkthrough: "Remember that Mom called every Sunday at six." said twice made
    two identical memories."""
    first = _call(client, "add_to_memory",
                  {"content": "Mom called every Sunday at six", "category": "context"}).json()
    again = _call(client, "add_to_memory",
                  {"content": "mom called every  Sunday at six", "category": "context"}).json()
    assert again["ok"] is True
    assert again["result"]["memory_id"] == first["result"]["memory_id"]
    assert again["result"]["message"].startswith("Already remembered")
    assert AgentMemory.objects.filter(user=alice).count() == 1


def test_add_to_memory_runs_as_the_caller_and_records_the_source(client, alice):
    conversation = ConversationFactory(user=alice, legacy__created_by=alice)
    message = MessageFactory(conversation=conversation, sequence=0)
    response = _call(
        client, "add_to_memory",
        {"content": "Alec is the user's boss", "category": "person", "subject": "Alec"},
        conversation_id=str(conversation.pk), message_id=str(message.pk),
    )
    assert response.status_code == 200
    memory = AgentMemory.objects.get(user=alice)
    assert response.json() == {
        "ok": True,
        "tool": "add_to_memory",
        "result": {
            "memory_id": memory.pk, "category": "person", "subject": "Alec",
            "content": "Alec is the user's boss", "version": 1,
            "message": f"Stored memory [id:{memory.pk}].",
        },
    }
    version = memory.versions.get()
    assert (version.source_conversation, version.source_message) == (conversation, message)


def test_add_to_memory_with_a_known_subject_suggests_update_memory(client, alice):
    first = _call(client, "add_to_memory",
                  {"content": "Sarah works on the Platform team", "category": "person",
                   "subject": "Sarah"}).json()["result"]
    before = _rows()
    response = _call(client, "add_to_memory",
                     {"content": "Sarah works on the Design team", "category": "person",
                      "subject": "SARAH"})
    assert response.status_code == 409
    body = response.json()
    assert body["ok"] is False
    assert body["code"] == "conflict"
    assert f"update_memory with memory_id={first['memory_id']}" in body["detail"]
    assert body["existing_memory"] == {
        "memory_id": first["memory_id"], "category": "person", "subject": "Sarah",
        "content": "Sarah works on the Platform team",
    }
    assert _rows() == before


def test_update_memory_answers_old_and_new_content(client):
    memory_id = _call(client, "add_to_memory",
                      {"content": "Sarah works on the Platform team", "category": "person",
                       "subject": "Sarah"}).json()["result"]["memory_id"]
    response = _call(client, "update_memory",
                     {"memory_id": memory_id, "content": "Sarah works on the Design team"})
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["old_content"] == "Sarah works on the Platform team"
    assert result["new_content"] == "Sarah works on the Design team"
    assert (result["memory_id"], result["version"]) == (memory_id, 2)


def test_arguments_may_be_the_json_text_openai_sends(client, alice):
    result = tools.tool_execute(
        user=alice, name="add_to_memory",
        arguments=json.dumps({"content": "User likes concise answers", "category": "preference"}),
    )
    assert result["ok"] is True
    assert AgentMemory.objects.filter(user=alice).count() == 1


@pytest.mark.parametrize(
    ("name", "arguments", "errors"),
    [
        ("add_to_memory", {}, {"content": ["This argument is required."],
                               "category": ["This argument is required."]}),
        ("add_to_memory", {"content": "Alec is the boss", "category": "boss"},
         {"category": ["Must be one of: person, preference, context, project."]}),
        ("add_to_memory", {"content": "Alec", "category": "person"},
         {"content": ["Must be 5–500 characters (got 4)."]}),
        ("add_to_memory", {"content": 42, "category": "person"},
         {"content": ["Must be a string."]}),
        ("add_to_memory", {"content": "Alec is the boss", "category": "person", "mood": "x"},
         {"mood": ["Unknown argument; expected: content, category, subject."]}),
        ("update_memory", {"content": "Sarah moved teams"},
         {"memory_id": ["This argument is required."]}),
        ("manage_user_memory", {}, {"operation": ["This argument is required."]}),
        ("manage_user_memory", {"operation": "add_fact"},
         {"content": ["This argument is required."]}),
        ("manage_user_memory", {"operation": "deactivate_fact"},
         {"fact_id": ["This argument is required."]}),
        ("manage_user_memory", {"operation": "add_poi", "place_id": "home"},
         {"place_name": ["This argument is required."]}),
    ],
)
def test_bad_arguments_come_back_as_a_structured_400(client, name, arguments, errors):
    response = _call(client, name, arguments)
    assert response.status_code == 400
    field, messages = next(iter(errors.items()))
    assert response.json() == {
        "ok": False, "code": "invalid_arguments", "detail": f"{field}: {messages[0]}",
        "errors": errors,
    }
    assert _rows() == (0, 0, 0, 0)


def test_missing_arguments_and_broken_json_are_400s(client, alice):
    response = client.post("/api/tools/update_memory", {}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "memory_id": ["This argument is required."], "content": ["This argument is required."],
    }
    broken = tools.tool_execute(user=alice, name="add_to_memory", arguments="{not json")
    assert broken == {
        "ok": False, "code": "invalid_arguments", "detail": "arguments: Must be a JSON object.",
        "errors": {"arguments": ["Must be a JSON object."]},
    }
    assert _rows() == (0, 0, 0, 0)


@pytest.mark.parametrize("arguments", [
    "[" * 50_000 + "]" * 50_000,  # deeper than the decoder follows: a RecursionError
    '{"subject": "garden", "content": "abc \\ud800 defg", "category": "other"}',  # unstorable
])
def test_arguments_text_nested_too_deeply_or_with_half_a_surrogate_pair_is_a_400(
    client, alice, arguments
):
    """A hostile-member probe: both were a 500 (the decoder's recursion, the insert's UTF-8)."""
    response = client.post("/api/tools/add_to_memory", {"arguments": arguments}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {"arguments": ["Must be a JSON object."]}
    assert _rows() == (0, 0, 0, 0)


def test_unknown_tool_is_a_404_and_unknown_operation_a_400(client, alice):
    response = _call(client, "delete_everything", {"x": 1})
    assert response.status_code == 404
    assert response.json() == {
        "ok": False, "code": "unknown_tool",
        "detail": "Unknown tool 'delete_everything'; available: add_to_memory, update_memory, "
        "manage_user_memory.",
    }
    response = _call(client, "manage_user_memory", {"operation": "forget_all"})
    assert response.status_code == 400
    assert response.json() == {
        "ok": False, "code": "unknown_operation",
        "detail": "Unknown operation 'forget_all'; use one of: add_fact, deactivate_fact, "
        "add_poi, get_memory.",
        "errors": {"operation": ["Must be one of: add_fact, deactivate_fact, add_poi, get_memory."]},
    }
    assert tools.tool_execute(user=alice, name="nope", arguments={})["code"] == "unknown_tool"
    assert _rows() == (0, 0, 0, 0)


def test_update_or_deactivate_of_someone_else_s_memory_is_not_found(client, alice):
    bob = UserFactory(username="bob")
    theirs = tools.tool_execute(user=bob, name="add_to_memory",
                                arguments={"content": "Bob's secret memory",
                                           "category": "context"})["result"]["memory_id"]
    before = _rows()
    update = _call(client, "update_memory", {"memory_id": theirs, "content": "Hijacked text"})
    assert update.status_code == 404
    assert update.json() == {"ok": False, "code": "not_found",
                             "detail": f"No active memory with id '{theirs}'."}
    deactivate = _call(client, "manage_user_memory",
                       {"operation": "deactivate_fact", "fact_id": theirs})
    assert deactivate.status_code == 404
    assert deactivate.json()["code"] == "not_found"
    assert _rows() == before
    assert AgentMemory.objects.get(pk=theirs).deleted_at is None


def test_another_user_s_conversation_or_message_is_a_404(client, alice):
    bob = UserFactory(username="bob")
    conversation = ConversationFactory(user=bob, legacy__created_by=bob)
    message = MessageFactory(conversation=conversation, sequence=0)
    arguments = {"content": "Alec is the user's boss", "category": "person"}
    spec = yaml.safe_load(client.get("/api/schema").content)
    for extra in ({"conversation_id": str(conversation.pk)}, {"message_id": str(message.pk)}):
        response = _call(client, "add_to_memory", arguments, **extra)
        assert response.status_code == 404
        assert response.json() == {"detail": "Not found.", "code": "not_found"}
        # As the schema says (before, it declared the tool's answer only).
        assert_documented(response, spec, "/api/tools/{name}", "post")
    assert _rows() == (0, 0, 0, 0)


def test_manage_user_memory_add_and_deactivate_a_fact(client, alice):
    added = _call(client, "manage_user_memory",
                  {"operation": "add_fact", "content": "User's name is Alex"})
    assert added.status_code == 200
    fact_id = added.json()["result"]["fact_id"]
    assert added.json() == {"ok": True, "tool": "manage_user_memory",
                            "result": {"operation": "add_fact", "fact_id": fact_id}}
    memory = AgentMemory.objects.get(pk=fact_id, user=alice)
    assert memory.category == "context"
    deactivated = _call(client, "manage_user_memory",
                        {"operation": "deactivate_fact", "fact_id": fact_id})
    assert deactivated.json() == {
        "ok": True, "tool": "manage_user_memory",
        "result": {"operation": "deactivate_fact", "fact_id": fact_id, "deactivated": True},
    }
    memory.refresh_from_db()
    assert memory.deleted_at is not None
    document = _call(client, "manage_user_memory", {"operation": "get_memory"}).json()["result"]
    assert document["operation"] == "get_memory"
    assert [(f["id"], f["is_active"]) for f in document["memory"]["facts"]] == [(fact_id, False)]


def test_add_poi_twice_adds_a_mention_to_the_same_place(client, alice):
    first = ConversationFactory(user=alice, legacy__created_by=alice)
    second = ConversationFactory(user=alice, legacy=first.legacy)
    message = MessageFactory(conversation=second, sequence=0)
    arguments = {"operation": "add_poi", "place_id": "home", "place_name": "Home",
                 "notes": "123 Main St, Seattle"}
    one = _call(client, "manage_user_memory", arguments, conversation_id=str(first.pk))
    assert one.json()["result"] == {"operation": "add_poi", "place_id": "home", "created": True,
                                    "mentioned_in_conversations": 1}
    two = _call(client, "manage_user_memory", {**arguments, "place_name": "Renamed"},
                message_id=str(message.pk))
    assert two.json()["result"] == {"operation": "add_poi", "place_id": "home", "created": False,
                                    "mentioned_in_conversations": 2}
    place = Place.objects.get(user=alice)
    assert (place.name, place.notes) == ("Home", "123 Main St, Seattle")
    assert [(m.conversation, m.message) for m in place.mentions.order_by("mentioned_at")] == [
        (first, None), (second, message),
    ]


# --- a call the platform's own model made (by_model) ----------------------------------------


def _turn(alice, said, reply="What would you like to tell me?"):
    conversation = ConversationFactory(user=alice, legacy__created_by=alice)
    MessageFactory(conversation=conversation, sequence=0, role="assistant", content=reply)
    message = MessageFactory(conversation=conversation, sequence=1, role="user", content=said)
    return conversation, message


def test_a_models_write_the_user_did_not_ask_for_is_held_back(client, alice):
    """Found by an integrator: a platform running its own model could only call the tools as
    the user, so the context's prompt promised a rule that nothing applied."""
    conversation, message = _turn(alice, "She loved to sing hymns on Sunday mornings.")
    response = _call(client, "add_to_memory",
                     {"content": "Rose loved to sing hymns on Sunday mornings",
                      "category": "context"},
                     message_id=str(message.pk), by_model=True)
    assert response.status_code == 409
    assert response.json()["ok"] is False and response.json()["code"] == "not_confirmed"
    assert response.json()["kind"] == "add"
    assert _rows() == (0, 0, 0, 0)
    # The same call as the user's own action is carried out (the tools API as before).
    assert _call(client, "add_to_memory",
                 {"content": "Rose loved to sing hymns on Sunday mornings",
                  "category": "context"}, message_id=str(message.pk)).status_code == 200


def test_a_models_write_the_user_asked_for_is_the_agents(client, alice):
    conversation, message = _turn(alice, "Please remember that my daughter is called Ellie.")
    response = _call(client, "add_to_memory",
                     {"content": "The user's daughter is called Ellie", "category": "person"},
                     message_id=str(message.pk), by_model=True)
    assert response.status_code == 200, response.json()
    version = AgentMemory.objects.get(user=alice).versions.get()
    assert version.origin == "agent"
    assert (version.source_conversation, version.source_message) == (conversation, message)
    # And the API says so (found by a live check: only the dashboard did).
    detail = client.get(f"/api/memory/{version.memory_id}").json()
    assert [(v["origin"], v["restored_from"]) for v in detail["versions"]] == [("agent", None)]


@pytest.mark.parametrize("body", [
    {"by_model": True},  # no message of the turn
    {"by_model": "maybe"},
])
def test_by_model_needs_the_users_message_of_the_turn(client, alice, body):
    response = _call(client, "add_to_memory",
                     {"content": "The user's daughter is called Ellie", "category": "person"},
                     **body)
    assert response.status_code == 400
    assert _rows() == (0, 0, 0, 0)


def test_by_model_with_the_agents_message_or_another_conversation_is_a_400(client, alice):
    conversation, message = _turn(alice, "Please remember that my daughter is called Ellie.")
    reply = conversation.messages.get(sequence=0)
    other = ConversationFactory(user=alice, legacy=conversation.legacy)
    arguments = {"content": "The user's daughter is called Ellie", "category": "person"}
    assert _call(client, "add_to_memory", arguments, message_id=str(reply.pk),
                 by_model=True).status_code == 400
    assert _call(client, "add_to_memory", arguments, message_id=str(message.pk),
                 conversation_id=str(other.pk), by_model=True).status_code == 400
    assert _rows() == (0, 0, 0, 0)


def test_by_model_with_an_older_message_than_the_latest_is_a_400(client, alice):
    """Found by a hostile relative: an old "remember …" approved a write a turn later."""
    conversation, message = _turn(alice, "Please remember that I take my tea with honey.")
    MessageFactory(conversation=conversation, sequence=2, role="assistant", content="Done.")
    MessageFactory(conversation=conversation, sequence=3, role="user", content="yes")
    response = _call(client, "add_to_memory",
                     {"content": "The user takes tea with honey", "category": "preference"},
                     message_id=str(message.pk), by_model=True)
    assert response.status_code == 400
    assert _rows() == (0, 0, 0, 0)
