"""Seed 004's session state kept per message in the same transaction and shown in the API: intents,
status and topics."""


import pytest

from conversations import services
from conversations.models import Conversation, Message
from conversations.session_state import SessionState, classify_intent, next_state
from tests.factories import ConversationFactory

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
