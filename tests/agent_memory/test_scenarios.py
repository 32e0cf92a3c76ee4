"""Seed 003's testing scenarios 1–6 and seed 001's success criteria, through the API."""

import pytest

from agent_memory.models import AgentMemory
from tests.factories import ConversationFactory, LegacyFactory
from tests.support.prompt import memory_block, places_block

pytestmark = pytest.mark.django_db




@pytest.fixture
def conversations(alice):
    legacy = LegacyFactory(created_by=alice)
    return [ConversationFactory(user=alice, legacy=legacy) for _ in range(2)]


def _tool(client, name, arguments, conversation=None):
    body = {"arguments": arguments}
    if conversation is not None:
        body["conversation_id"] = str(conversation.pk)
    response = client.post(f"/api/tools/{name}", body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()["result"]


def test_scenario_1_the_confirmed_memory_is_stored(client, alice, conversations):
    result = _tool(client, "add_to_memory", {"content": "Alec is the user's boss",
                                             "category": "person", "subject": "Alec"},
                   conversations[0])
    memory = AgentMemory.objects.get(user=alice)
    assert (result["memory_id"], memory.category, memory.subject) == (memory.pk, "person", "Alec")
    assert memory.versions.get().source_conversation == conversations[0]


def test_scenario_2_a_new_session_recalls_the_memory(client, alice, conversations):
    memory_id = _tool(client, "add_to_memory", {"content": "Alec is the user's boss",
                                                "category": "person", "subject": "Alec"},
                      conversations[0])["memory_id"]
    # The context of any later conversation carries the memory with its id.
    block = memory_block(alice)
    assert f"- [id:{memory_id}] [Alec] Alec is the user's boss" in block.splitlines()


def test_scenario_3_changed_information_updates_the_same_memory(client, alice, conversations):
    memory_id = _tool(client, "add_to_memory", {"content": "Sarah works on the Platform team",
                                                "category": "person", "subject": "Sarah"})[
        "memory_id"]
    result = _tool(client, "update_memory", {"memory_id": memory_id,
                                             "content": "Sarah works on the Design team"},
                   conversations[1])
    assert (result["memory_id"], result["version"]) == (memory_id, 2)
    assert client.get("/api/memory").json()["memories"][0]["content"] == (
        "Sarah works on the Design team"
    )
    assert f"[id:{memory_id}] [Sarah] Sarah works on the Design team" in (
        memory_block(alice)
    )
    assert AgentMemory.objects.filter(user=alice).count() == 1


def test_scenario_4_a_declined_memory_is_not_stored(client, alice, conversations):
    # Only a tool call writes a memory: the chat itself stores nothing.
    response = client.post(
        f"/api/ai/conversations/{conversations[0].pk}/messages",
        {"role": "user", "content": "I'm working with James on this project"}, format="json",
    )
    assert response.status_code == 201
    client.post(f"/api/ai/conversations/{conversations[0].pk}/messages",
                {"role": "user", "content": "No, it's just for this task"}, format="json")
    assert AgentMemory.objects.filter(user=alice).count() == 0
    assert client.get("/api/memory").json()["total"] == 0
    assert memory_block(alice) == ""


def test_scenarios_5_and_6_list_and_delete_without_the_agent(client):
    alec = _tool(client, "add_to_memory", {"content": "Alec is the user's boss",
                                           "category": "person", "subject": "Alec"})
    thursday = _tool(client, "add_to_memory", {"content": "User prefers Thursday due dates",
                                               "category": "preference"})
    listing = client.post("/api/commands", {"text": "/memory"}, format="json").json()["reply"]
    assert f"**Person**\n• [{alec['memory_id']}] Alec is the user's boss" in listing
    assert f"**Preference**\n• [{thursday['memory_id']}] User prefers Thursday due dates" in (
        listing
    )
    assert listing.endswith("Use /memory delete <id> to remove a memory.")
    deleted = client.post("/api/commands", {"text": f"/memory delete {thursday['memory_id']}"},
                          format="json")
    assert deleted.json() == {"reply": "Deleted: 'User prefers Thursday due dates'"}
    assert [m["id"] for m in client.get("/api/memory").json()["memories"]] == [
        alec["memory_id"]
    ]


def test_seed_001_facts_and_places_persist_across_conversations(client, alice, conversations):
    first, second = conversations
    fact_id = _tool(client, "manage_user_memory",
                    {"operation": "add_fact", "content": "User prefers morning workouts"},
                    first)["fact_id"]
    _tool(client, "manage_user_memory",
          {"operation": "add_poi", "place_id": "home", "place_name": "Home",
           "notes": "123 Main St, Seattle"}, first)
    _tool(client, "manage_user_memory",
          {"operation": "add_poi", "place_id": "home", "place_name": "Home"}, second)
    # Retrieved in another conversation: the tool, the document and the context agree.
    memory = _tool(client, "manage_user_memory", {"operation": "get_memory"}, second)["memory"]
    assert [(f["id"], f["content"], f["is_active"]) for f in memory["facts"]] == [
        (fact_id, "User prefers morning workouts", True)
    ]
    assert memory["placer_user_datapoints"][0]["place_name"] == "Home"
    assert set(memory["placer_user_datapoints"][0]["mentioned_in"]) == {
        str(first.pk), str(second.pk)
    }
    assert memory["metadata"]["total_pois"] == 1
    assert client.get("/api/memory/document").json()["facts"] == memory["facts"]
    assert "- Home: 123 Main St, Seattle (mentioned in 2 conversations)" in (
        places_block(alice)
    )
    assert f"[id:{fact_id}] User prefers morning workouts" in memory_block(alice)
    # A correction: deactivate the old fact, add the new one.
    _tool(client, "manage_user_memory", {"operation": "deactivate_fact", "fact_id": fact_id})
    _tool(client, "manage_user_memory",
          {"operation": "add_fact", "content": "User prefers evening workouts"})
    document = client.get("/api/memory/document").json()
    assert [(f["content"], f["is_active"]) for f in document["facts"]] == [
        ("User prefers morning workouts", False), ("User prefers evening workouts", True),
    ]
    assert (document["metadata"]["total_facts"], document["metadata"]["total_active_facts"]) == (
        2, 1
    )
