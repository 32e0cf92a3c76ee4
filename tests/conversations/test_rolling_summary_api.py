"""The memory, chunks and close endpoints, and the "Done when" scenario through the REST API alone."""

import pytest

from facts.models import LegacyFact
from tests.conftest import api_client_for
from tests.factories import ConversationChunkFactory, ConversationFactory, ConversationMemoryFactory

pytestmark = pytest.mark.django_db

USER_SAYS = [
    "Mom was a nurse at St. Mary's Hospital in Dayton.",
    "She was born in 1931 on a farm in Ohio.",
    "Every Sunday Mom baked bread for the whole street.",
    "Her favorite flower was the peony.",
    "I was born in 1960 and I became a teacher myself.",
    "Do you think she would have liked my garden?",
    "Mom loved fishing with my uncle on Lake Erie.",
    "If she had retired earlier, she might have traveled more.",
]
ASSISTANT_SAYS = "Rose was a wonderful pianist, you know. What else do you remember?"


def start(client, legacy_id):
    response = client.post("/api/ai/conversations", {"legacy_id": str(legacy_id)}, format="json")
    assert response.status_code == 201
    return response.json()["id"]


def post(client, capture, path, data=None):
    with capture(execute=True):
        return client.post(path, data, format="json")


def test_done_when_64_messages_then_close(family, owner_client, django_capture_on_commit_callbacks):
    conversation_id = start(owner_client, family.legacy.pk)
    base = f"/api/ai/conversations/{conversation_id}"
    for i in range(64):
        role, content = ("user", USER_SAYS[(i // 2) % len(USER_SAYS)]) if i % 2 == 0 else (
            "assistant", ASSISTANT_SAYS)
        response = post(owner_client, django_capture_on_commit_callbacks, f"{base}/messages",
                        {"role": role, "content": content})
        assert response.status_code == 201 and response.json()["sequence"] == i

    chunks = owner_client.get(f"{base}/chunks").json()
    assert chunks["total"] == 2
    assert [(c["message_range_start"], c["message_range_end"]) for c in chunks["chunks"]] == [
        (0, 20), (20, 40)]
    assert all(c["conversation_id"] == conversation_id for c in chunks["chunks"])

    memories = owner_client.get(f"{base}/memory?limit=200").json()
    rows = memories["memories"]
    assert memories["total"] == len(rows) == 30  # one per assistant message from seq 5 on
    assert {m["status"] for m in rows} == {"completed"}
    assert rows[0]["base_memory_id"] is None
    assert all(m["base_memory_id"] == prev["id"] for prev, m in zip(rows, rows[1:], strict=False))
    assert (rows[-1]["start_sequence"], rows[-1]["end_sequence"]) == (50, 63)

    facts = set(LegacyFact.objects.filter(legacy=family.legacy, user=family.owner)
                .values_list("category", "content"))
    assert facts == {
        ("occupation", "Rose was a nurse at St. Mary's Hospital in Dayton."),
        ("milestone", "Rose was born in 1931 on a farm in Ohio."),
        ("habit", "Every Sunday Rose baked bread for the whole street."),
        ("preference", "Rose's favorite flower was the peony."),
        ("hobby", "Rose loved fishing with my uncle on Lake Erie."),
    }  # not the assistant's "pianist", the user's own birth, a question or a hypothetical

    response = post(owner_client, django_capture_on_commit_callbacks, f"{base}/close")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "shutdown_clean" and body["session_state"]["status"] == "shutdown_clean"
    ranges = [(c["message_range_start"], c["message_range_end"])
              for c in owner_client.get(f"{base}/chunks").json()["chunks"]]
    assert ranges == [(0, 20), (20, 40), (40, 60), (60, 64)]
    last = owner_client.get(f"{base}/memory?limit=200").json()["memories"][-1]
    assert (last["status"], last["end_sequence"]) == ("completed", 63)


def test_memory_list_body(family, owner_client):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    first = ConversationMemoryFactory(
        conversation=conversation, start_sequence=0, end_sequence=5, status="completed",
        memory_text="[0] Rose was a nurse.", generation_time_ms=12)
    second = ConversationMemoryFactory(
        conversation=conversation, start_sequence=0, end_sequence=7, status="failed",
        base_memory=first, error="LLMError: boom")
    response = owner_client.get(f"/api/ai/conversations/{conversation.pk}/memory")
    assert response.status_code == 200
    assert response.json() == {
        "memories": [
            {"id": str(first.pk), "start_sequence": 0, "end_sequence": 5, "status": "completed",
             "base_memory_id": None, "memory_text": "[0] Rose was a nurse.",
             "generation_time_ms": 12,
             "created_at": first.created_at.isoformat().replace("+00:00", "Z")},
            {"id": str(second.pk), "start_sequence": 0, "end_sequence": 7, "status": "failed",
             "base_memory_id": str(first.pk), "memory_text": "", "generation_time_ms": None,
             "created_at": second.created_at.isoformat().replace("+00:00", "Z")},
        ],
        "total": 2, "limit": 50, "offset": 0,
    }


def test_chunk_list_body(family, owner_client):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    chunk = ConversationChunkFactory(
        conversation=conversation, user=family.owner, legacy=family.legacy,
        content="They talked about Rose's nursing.", embedding=[1.0] + [0.0] * 1023,
        message_range_start=0, message_range_end=20)
    response = owner_client.get(f"/api/ai/conversations/{conversation.pk}/chunks/")
    assert response.status_code == 200
    assert response.json() == {
        "chunks": [{
            "id": str(chunk.pk), "conversation_id": str(conversation.pk),
            "content": "They talked about Rose's nursing.", "message_range_start": 0,
            "message_range_end": 20,
            "created_at": chunk.created_at.isoformat().replace("+00:00", "Z"),
        }],
        "total": 1, "limit": 50, "offset": 0,
    }


@pytest.mark.parametrize("path", ["memory", "chunks"])
@pytest.mark.parametrize("who", ["stranger", "other_member", "member"])
def test_reads_of_someone_elses_conversation_are_404(family, path, who):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    ConversationMemoryFactory(conversation=conversation, start_sequence=0, end_sequence=5,
                              status="completed", memory_text="private")
    response = api_client_for(getattr(family, who)).get(
        f"/api/ai/conversations/{conversation.pk}/{path}")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found.", "code": "not_found"}


@pytest.mark.parametrize("path", ["memory", "chunks"])
def test_reads_need_authentication(family, anon_client, path):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    response = anon_client.get(f"/api/ai/conversations/{conversation.pk}/{path}")
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"


@pytest.mark.parametrize("who", ["stranger", "other_member", "member", None])
def test_only_the_owner_closes(family, who, django_capture_on_commit_callbacks):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    client = api_client_for(getattr(family, who) if who else None)
    response = post(client, django_capture_on_commit_callbacks,
                    f"/api/ai/conversations/{conversation.pk}/close")
    assert response.status_code == (401 if who is None else 404)
    conversation.refresh_from_db()
    assert (conversation.status, conversation.closed_at) == ("active", None)


def test_close_is_idempotent_and_a_new_message_resumes(family, owner_client,
                                                       django_capture_on_commit_callbacks):
    conversation_id = start(owner_client, family.legacy.pk)
    base = f"/api/ai/conversations/{conversation_id}"
    post(owner_client, django_capture_on_commit_callbacks, f"{base}/messages",
         {"role": "user", "content": "Mom grew up in Dayton."})
    first = post(owner_client, django_capture_on_commit_callbacks, f"{base}/close").json()
    again = post(owner_client, django_capture_on_commit_callbacks, f"{base}/close").json()
    assert first["closed_at"] == again["closed_at"] and again["status"] == "shutdown_clean"
    assert owner_client.get(f"{base}/chunks").json()["total"] == 1

    post(owner_client, django_capture_on_commit_callbacks, f"{base}/messages",
         {"role": "user", "content": "I'm back. Mom also loved to dance."})
    assert owner_client.get(base).json()["session_state"]["status"] == "resuming"
    post(owner_client, django_capture_on_commit_callbacks, f"{base}/messages",
         {"role": "assistant", "content": "Welcome back. Dancing sounds lovely."})
    assert owner_client.get(base).json()["session_state"]["status"] == "active"
