"""Seed 004's session state kept per message, and the admin's view and retry of failed or stuck summaries."""

from datetime import timedelta

import pytest

from conversations import selectors, services
from conversations.models import Conversation, ConversationMemory, Message
from conversations.services import summarization
from conversations.session_state import SessionState, classify_intent, next_state
from tests.factories import ConversationFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(family):
    return ConversationFactory(legacy=family.legacy, user=family.owner)


def test_state_is_updated_with_each_message_in_the_same_transaction(conversation):
    services.message_append(conversation=conversation, role="user",
                            content="Remind me to ask my aunt about Mom's wedding in 1958.")
    services.message_append(conversation=conversation, role="assistant",
                            content="I will. Was the wedding in Dayton?")
    stored = Conversation.objects.get(pk=conversation.pk)
    assert (stored.turn_count, stored.last_intent, stored.status) == (
        1, "request_reminder", "awaiting_clarification")
    assert stored.active_topics == ["family", "marriage"]
    assert stored.open_loops == ["Remind me to ask my aunt about Mom's wedding in 1958."]
    assert stored.pending_clarifications == ["Was the wedding in Dayton?"]

    services.message_append(conversation=conversation, role="user",
                            content="Yes, at the church on Main Street.")
    stored.refresh_from_db()
    assert (stored.turn_count, stored.status, stored.pending_clarifications) == (2, "active", [])
    assert stored.active_topics[0] == "faith"

    services.message_append(conversation=conversation, role="user",
                            content="I asked my aunt about the wedding, she had photos.")
    stored.refresh_from_db()
    assert stored.open_loops == []


def test_a_failed_append_changes_no_state(conversation, monkeypatch):
    def broken_create(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(Message.objects, "create", broken_create)
    with pytest.raises(RuntimeError):
        services.message_append(conversation=conversation, role="user", content="Mom sang.")
    stored = Conversation.objects.get(pk=conversation.pk)
    assert (stored.turn_count, stored.message_count, stored.last_intent) == (0, 0, "")


def test_state_is_shown_in_the_conversation_detail(family, owner_client, conversation):
    services.message_append(conversation=conversation, role="user",
                            content="Hello, I miss my mother so much today.")
    response = owner_client.get(f"/api/ai/conversations/{conversation.pk}")
    assert response.json()["session_state"] == {
        "status": "active", "active_topics": [], "open_loops": [],
        "pending_clarifications": [], "last_intent": "express_emotion", "turn_count": 1,
    }


@pytest.mark.parametrize(("text", "intent"), [
    ("Hi there", "greeting"),
    ("What did Mom do in the war?", "question"),
    ("Actually, it was 1962.", "correction"),
    ("Thanks so much.", "thanks"),
    ("Goodbye for now", "farewell"),
    ("Mom grew up on a farm in Ohio.", "share_memory"),
])
def test_intents(text, intent):
    assert classify_intent(text) == intent


def test_a_closed_session_resumes_then_becomes_active():
    closed = SessionState(status="shutdown_clean")
    resuming = next_state(closed, role="user", content="I'm back.")
    assert resuming.status == "resuming"
    assert next_state(resuming, role="user", content="More about Mom.").status == "resuming"
    assert next_state(resuming, role="assistant", content="Welcome back.").status == "active"


def test_topics_are_most_recent_first_and_bounded(settings):
    settings.SESSION_ACTIVE_TOPICS_MAX = 2
    state = SessionState()
    for text in ("She worked at the factory.", "She sang in the choir.", "She loved her garden."):
        state = next_state(state, role="user", content=text)
    assert state.active_topics == ["garden", "music"]


# --- admin -----------------------------------------------------------------------------------


@pytest.fixture
def staff_client(client):
    admin = UserFactory(username="support", is_staff=True, is_superuser=True)
    client.force_login(admin)
    return client


def _messages(conversation, count):
    Message.objects.bulk_create(
        Message(conversation=conversation, sequence=i, role="user" if i % 2 == 0 else "assistant",
                content=f"Mom was a nurse, line {i}.") for i in range(count))
    Conversation.objects.filter(pk=conversation.pk).update(message_count=count)
    conversation.refresh_from_db()


def test_admin_lists_failed_and_stuck_and_retries_them(staff_client, conversation,
                                                       django_capture_on_commit_callbacks):
    _messages(conversation, 8)
    failed = ConversationMemory.objects.create(
        conversation=conversation, start_sequence=0, end_sequence=7, status="failed",
        error="LLMError: boom")
    stuck = summarization.memory_begin(conversation=conversation)
    ConversationMemory.objects.filter(pk=stuck.pk).update(
        created_at=stuck.created_at - timedelta(minutes=10))
    done = ConversationMemory.objects.create(
        conversation=conversation, start_sequence=0, end_sequence=5, status="completed",
        memory_text="[0] ok")

    url = "/admin/conversations/conversationmemory/"
    page = staff_client.get(url, {"attention": "any"}).content.decode()
    assert str(failed.pk) in page and str(stuck.pk) in page and str(done.pk) not in page
    assert "LLMError: boom" in page

    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(url, {
            "action": "retry_summaries",
            "_selected_action": [str(failed.pk), str(stuck.pk), str(done.pk)],
        }, follow=True)
    assert "Retrying 2 summaries; 1 skipped" in response.content.decode()
    stuck.refresh_from_db()
    assert stuck.status == "failed"
    latest = selectors.latest_completed_memory(conversation=conversation)
    assert (latest.end_sequence, latest.base_memory_id) == (7, done.pk)


def test_admin_retry_leaves_a_running_summary_alone(staff_client, conversation):
    _messages(conversation, 8)
    running = summarization.memory_begin(conversation=conversation)
    response = staff_client.post("/admin/conversations/conversationmemory/", {
        "action": "retry_summaries", "_selected_action": [str(running.pk)]}, follow=True)
    assert "Retrying 0 summaries; 1 skipped" in response.content.decode()
    running.refresh_from_db()
    assert running.status == "processing"
