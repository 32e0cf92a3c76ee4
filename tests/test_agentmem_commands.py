"""The /memory command (seed 003 scenarios 5 and 6) through POST /api/commands."""

import pytest

from agent_memory import services
from agent_memory.models import AgentMemory
from tests.conftest import api_client_for
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

USAGE = (
    "Usage:\n"
    "/memory or /memory list — show what I remember about you\n"
    "/memory delete <id> — forget one memory (the id is shown in the list)"
)


@pytest.fixture
def alice():
    return UserFactory(username="alice")


@pytest.fixture
def client(alice):
    return api_client_for(alice)


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
