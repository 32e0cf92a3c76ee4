"""The memory API (seed 003): list, create, versions, soft delete, conflicts, tenancy, bad input."""

import importlib

import pytest

from agent_memory import services
from agent_memory.models import AgentMemory, AgentMemoryVersion
from tests.conftest import api_client_for
from tests.factories import ConversationFactory, MessageFactory, UserFactory

pytestmark = pytest.mark.django_db



@pytest.fixture
def bob():
    return UserFactory(username="bob")



def _create(client, **body):
    response = client.post("/api/memory", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def _counts():
    return AgentMemory.objects.count(), AgentMemoryVersion.objects.count()


def test_create_answers_201_with_the_memory(client, alice):
    body = _create(client, content="Alec is the user's boss", category="person", subject="Alec")
    memory = AgentMemory.objects.get(user=alice)
    assert body == {
        "id": memory.pk,
        "category": "person",
        "subject": "Alec",
        "content": "Alec is the user's boss",
        "version": 1,
        "created_at": body["created_at"],
        "updated_at": body["updated_at"],
    }
    assert len(memory.pk) == 8 and memory.pk.isalnum() and memory.pk.isascii()
    assert body["created_at"] and body["updated_at"]


def test_list_is_my_active_memories_by_category_then_created_at(client, alice, bob):
    first = _create(client, content="User works on the Platform team", category="project")
    second = _create(client, content="Alec is the user's boss", category="person", subject="Alec")
    third = _create(client, content="Sarah is on the Platform team", category="person")
    gone = _create(client, content="User prefers Thursday due dates", category="preference")
    client.delete(f"/api/memory/{gone['id']}")
    api_client_for(bob).post(
        "/api/memory", {"content": "Bob's own memory", "category": "context"}, format="json"
    )
    response = client.get("/api/memory")
    assert response.status_code == 200
    body = response.json()
    assert [m["id"] for m in body["memories"]] == [second["id"], third["id"], first["id"]]
    assert body["total"] == 3
    assert body["memories"][0] == second


def test_get_one_shows_the_full_version_history(client):
    memory = _create(client, content="Sarah works on Platform team", category="person",
                     subject="Sarah")
    client.put(f"/api/memory/{memory['id']}", {"content": "Sarah works on Design team"},
                format="json")
    client.put(f"/api/memory/{memory['id']}", {"content": "Sarah is Design team lead"},
                format="json")
    response = client.get(f"/api/memory/{memory['id']}")
    assert response.status_code == 200
    body = response.json()
    assert body["content"] == "Sarah is Design team lead"
    assert body["version"] == 3
    assert body["is_active"] is True
    assert body["deleted_at"] is None
    assert [(v["version"], v["content"]) for v in body["versions"]] == [
        (1, "Sarah works on Platform team"),
        (2, "Sarah works on Design team"),
        (3, "Sarah is Design team lead"),
    ]
    assert body["updated_at"] == body["versions"][-1]["created_at"]


def test_put_creates_version_n_plus_1_and_answers_old_and_new(client):
    memory = _create(client, content="Sarah works on the Platform team", category="person",
                     subject="Sarah")
    response = client.put(
        f"/api/memory/{memory['id']}", {"content": "Sarah works on the Design team"}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body == {
        **memory,
        "content": "Sarah works on the Design team",
        "version": 2,
        "updated_at": body["updated_at"],
        "old_content": "Sarah works on the Platform team",
        "new_content": "Sarah works on the Design team",
    }
    assert body["id"] == memory["id"]


def test_delete_soft_deletes_and_keeps_the_history_for_the_owner(client, alice):
    memory = _create(client, content="User prefers Thursday due dates", category="preference")
    response = client.delete(f"/api/memory/{memory['id']}")
    assert response.status_code == 200
    assert response.json()["deleted_at"] is not None
    assert client.get("/api/memory").json()["total"] == 0
    detail = client.get(f"/api/memory/{memory['id']}").json()
    assert detail["is_active"] is False
    assert detail["deleted_at"] == response.json()["deleted_at"]
    assert [v["content"] for v in detail["versions"]] == ["User prefers Thursday due dates"]
    # Gone for writes too: a second delete and an update are 404s.
    assert client.delete(f"/api/memory/{memory['id']}").status_code == 404
    put = client.put(f"/api/memory/{memory['id']}", {"content": "Changed my mind"}, format="json")
    assert put.status_code == 404
    assert AgentMemoryVersion.objects.filter(memory_id=memory["id"]).count() == 1


def test_a_subject_i_already_have_is_a_409_with_that_memory(client):
    memory = _create(client, content="Alec is the user's boss", category="person", subject="Alec")
    before = _counts()
    response = client.post(
        "/api/memory",
        {"content": "Alec is the user's manager", "category": "person", "subject": "alec"},
        format="json",
    )
    assert response.status_code == 409
    assert response.json() == {
        "detail": f"You already have a memory about 'Alec' ({memory['id']}).",
        "code": "conflict",
        "suggestion": f"Update it instead: PUT /api/memory/{memory['id']} or the update_memory "
        f"tool with memory_id={memory['id']}.",
        "existing_memory": memory,
    }
    assert _counts() == before


@pytest.mark.parametrize("subject", [
    " rose ", "ROSE", "\uff32\uff4f\uff53\uff45",  # full-width "Ｒｏｓｅ"
    "Rose\u200b", "R\u200dose", "\u2060Ro\u00adse\ufeff", "Ro\u034fse", "ROſE",  # ſ: long s
    "Rose\u2800",  # a blank Braille pattern
])
def test_a_subject_that_reads_the_same_is_a_409_with_that_memory(client, subject):
    memory = _create(client, content="Rose is the user's grandmother", category="person",
                     subject="Rose")
    before = _counts()
    response = client.post(
        "/api/memory",
        {"content": "Rose grew dahlias", "category": "person", "subject": subject},
        format="json",
    )
    assert response.status_code == 409
    assert response.json()["existing_memory"] == memory
    assert _counts() == before


def test_a_subject_held_by_a_full_width_or_invisible_variant_is_found_too(client):
    memory = _create(client, content="Rose is the user's grandmother", category="person",
                     subject="\uff32o\u200bse")
    response = client.post(
        "/api/memory", {"content": "Rose grew dahlias", "category": "person", "subject": "rose"},
        format="json",
    )
    assert response.status_code == 409
    assert response.json()["existing_memory"]["id"] == memory["id"]
    # Other names are other subjects.
    _create(client, content="Rosa is the user's aunt", category="person", subject="Rosa")
    _create(client, content="Roses grew in her garden", category="context", subject="Roses")


def test_a_subject_is_stored_as_a_reader_sees_it(client):
    memory = _create(client, content="Rose is the user's grandmother", category="person",
                     subject="\u2060Ro\u200dse\ufeff  Whit\u00adfield ")
    assert memory["subject"] == "Rose Whitfield"
    composed = _create(client, content="Zoë was her friend", category="person",
                       subject="Zoe\u0308")
    assert composed["subject"] == "Zo\u00eb"
    # Nothing a reader can see is no subject, like an empty one: it holds no name of another.
    for invisible in ("\u200b\u200d", "\ufeff \u2060"):
        blank = _create(client, content="Some memory", category="context", subject=invisible)
        assert blank["subject"] is None


def test_a_memory_is_counted_as_the_schema_counts_and_stored_as_seen(client):
    # Five characters sent (the schema's count) are enough, though one is invisible: counted
    # after dropping it, four were refused.
    memory = _create(client, content="Ros\u200be", category="context")
    assert memory["content"] == "Rose"


def test_a_memory_of_only_invisible_characters_is_refused(client):
    before = _counts()
    for content in ("\u200b" * 5, "\u2800" * 5, "\u3164\u115f\u1160\u034f\u200d"):
        response = client.post("/api/memory", {"content": content, "category": "context"},
                               format="json")
        assert response.status_code == 400
        assert "content" in response.json()["errors"]
    assert _counts() == before


def test_subjects_written_before_are_stored_as_seen_by_the_migration(alice):
    from django.apps import apps

    migration = importlib.import_module("agent_memory.migrations.0005_memory_subjects_as_seen")
    rows = {
        subject: AgentMemory.objects.create(
            id=f"m{index}", user=alice, category="person", subject=subject
        )
        for index, subject in enumerate(["Ro\u200bse", "\u200d\ufeff", "Anna", None])
    }
    migration.subjects_as_seen(apps, None)
    assert {
        before: AgentMemory.objects.get(pk=row.pk).subject for before, row in rows.items()
    } == {"Ro\u200bse": "Rose", "\u200d\ufeff": None, "Anna": "Anna", None: None}


def test_a_deleted_memory_s_subject_can_be_used_again(client):
    memory = _create(client, content="Alec is the user's boss", category="person", subject="Alec")
    client.delete(f"/api/memory/{memory['id']}")
    again = _create(client, content="Alec is the user's former boss", category="person",
                    subject="Alec")
    assert again["id"] != memory["id"]


def test_another_user_s_memory_is_a_404_like_a_missing_one(client, bob):
    theirs = api_client_for(bob).post(
        "/api/memory", {"content": "Bob's private memory", "category": "context"}, format="json"
    ).json()
    before = _counts()
    not_found = {"detail": "Not found.", "code": "not_found"}
    for memory_id in (theirs["id"], "zzzzzzzz"):
        assert client.get(f"/api/memory/{memory_id}").json() == not_found
        assert client.get(f"/api/memory/{memory_id}").status_code == 404
        put = client.put(f"/api/memory/{memory_id}", {"content": "Hijacked memory"}, format="json")
        assert (put.status_code, put.json()) == (404, not_found)
        delete = client.delete(f"/api/memory/{memory_id}")
        assert (delete.status_code, delete.json()) == (404, not_found)
    assert _counts() == before
    assert AgentMemory.objects.get(pk=theirs["id"]).deleted_at is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "Alec is the boss", "category": "colleague"}, "category"),
        ({"content": "abcd", "category": "person"}, "content"),
        ({"content": "x" * 501, "category": "person"}, "content"),
        ({"content": "Alec is the boss", "category": "person", "subject": "s" * 201}, "subject"),
        ({"category": "person"}, "content"),
        ({"content": "Alec is the boss"}, "category"),
    ],
)
def test_bad_input_is_a_400_with_field_errors_and_nothing_written(client, body, field):
    response = client.post("/api/memory", body, format="json")
    assert response.status_code == 400
    data = response.json()
    assert data["code"] == "invalid"
    assert list(data["errors"]) == [field]
    assert data["detail"].startswith(f"{field}: ")
    assert _counts() == (0, 0)


def test_too_short_update_is_a_400_and_no_version(client):
    memory = _create(client, content="Alec is the user's boss", category="person")
    response = client.put(f"/api/memory/{memory['id']}", {"content": "no"}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "detail": "content: Must be 5–500 characters (got 2).",
        "code": "invalid",
        "errors": {"content": ["Must be 5–500 characters (got 2)."]},
    }
    assert AgentMemoryVersion.objects.filter(memory_id=memory["id"]).count() == 1


def test_lengths_follow_the_settings(client, settings):
    settings.MEMORY_CONTENT_MIN_CHARS = 10
    response = client.post("/api/memory", {"content": "Too short", "category": "person"},
                           format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {"content": ["Must be 10–500 characters (got 9)."]}


def test_the_source_conversation_is_recorded_and_must_be_mine(client, alice, bob):
    mine = ConversationFactory(user=alice, legacy__created_by=alice)
    message = MessageFactory(conversation=mine, sequence=0)
    theirs = ConversationFactory(user=bob, legacy__created_by=bob)
    body = _create(client, content="Alec is the user's boss", category="person",
                   conversation_id=str(mine.pk), message_id=str(message.pk))
    version = AgentMemoryVersion.objects.get(memory_id=body["id"])
    assert (version.source_conversation, version.source_message) == (mine, message)
    response = client.post(
        "/api/memory",
        {"content": "Sneaky memory text", "category": "person", "conversation_id": str(theirs.pk)},
        format="json",
    )
    assert response.status_code == 404
    assert AgentMemory.objects.count() == 1


def test_short_id_collisions_draw_again(client, alice, monkeypatch):
    taken = _create(client, content="Alec is the user's boss", category="person")["id"]
    drawn = iter([taken, "document", "Fresh123"])
    monkeypatch.setattr(services, "generate_short_id", lambda: next(drawn))
    body = _create(client, content="Sarah is a colleague", category="person")
    assert body["id"] == "Fresh123"
    assert AgentMemory.objects.filter(user=alice).count() == 2


def test_the_document_path_is_not_a_memory_id(client):
    assert client.get("/api/memory/document").status_code == 200


def test_anonymous_callers_are_turned_away(anon_client):
    for method, path in [("get", "/api/memory"), ("post", "/api/memory"),
                         ("get", "/api/memory/abcdefgh"), ("get", "/api/memory/document"),
                         ("get", "/api/tools"), ("post", "/api/tools/add_to_memory"),
                         ("post", "/api/commands")]:
        response = getattr(anon_client, method)(path, {}, format="json")
        assert response.status_code == 401, path
        assert response.json() == {
            "detail": "Authentication credentials were not provided.",
            "code": "not_authenticated",
        }
    assert AgentMemory.objects.count() == 0
