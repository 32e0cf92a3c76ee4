"""The chat page without JavaScript and with htmx: pick, start, send, see the context; /chat
chooses the legacy when the user belongs to one only, with several the user picks."""

from datetime import UTC, datetime

import pytest
from django.test import Client

from agent_memory.models import AgentMemory, Place
from conversations.models import Conversation, Message
from tests.factories import ConversationFactory, MembershipFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser(family) -> Client:
    client = Client()
    client.force_login(family.owner)
    return client


def test_pick_a_legacy_start_and_talk_without_javascript(family, browser):
    home = browser.get("/chat", {"legacy": family.legacy.pk})
    assert home.status_code == 200
    assert "Start a new conversation" in home.content.decode()

    started = browser.post("/chat/start", {"legacy_id": family.legacy.pk, "title": "Lake days"})
    conversation = Conversation.objects.get(user=family.owner, title="Lake days")
    assert started.status_code == 302 and started["Location"] == f"/chat/{conversation.pk}"

    sent = browser.post(f"/chat/{conversation.pk}/send",
                        {"content": "Remember that Rose loved the lake.", "idempotency_key": "a"})
    assert sent.status_code == 302
    page = browser.get(f"/chat/{conversation.pk}").content.decode()
    assert "Rose loved the lake" in page
    assert "Noted — I&#x27;ll remember that" in page or "Noted — I'll remember that" in page
    assert 'data-part="memory"' in page and "token-bar" in page
    # A double submit of the same form runs the turn once.
    browser.post(f"/chat/{conversation.pk}/send",
                 {"content": "Remember that Rose loved the lake.", "idempotency_key": "a"})
    assert Message.objects.filter(conversation=conversation, role="user").count() == 1


def test_htmx_send_answers_the_fragment(family, browser):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    response = browser.post(f"/chat/{conversation.pk}/send", {"content": "Hello"},
                            HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in body and 'class="chat-layout"' in body
    assert "Offline mode" in body


def test_an_empty_message_is_an_error_in_place(family, browser):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    response = browser.post(f"/chat/{conversation.pk}/send", {"content": " "},
                            HTTP_HX_REQUEST="true")
    # 200, not 400: htmx swaps only 2xx answers, and the error must show in place.
    assert response.status_code == 200
    body = response.content.decode()
    assert "<html" not in body
    assert '<p class="error" role="alert">A message needs some content.</p>' in body
    assert not Message.objects.filter(conversation=conversation).exists()


def test_an_empty_message_without_javascript_redirects_with_the_error(family, browser):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    response = browser.post(f"/chat/{conversation.pk}/send", {"content": " "})
    assert response.status_code == 302
    assert response["Location"] == f"/chat/{conversation.pk}"
    assert "A message needs some content." in browser.get(response["Location"]).content.decode()
    assert not Message.objects.filter(conversation=conversation).exists()


@pytest.mark.parametrize("who", ["stranger", "other_member", "member"])
def test_someone_elses_conversation_is_a_404(family, who):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    client = Client()
    client.force_login(getattr(family, who))
    before = _written()
    assert client.get(f"/chat/{conversation.pk}").status_code == 404
    # Content the offline agent would answer with a memory tool call, were the turn run.
    send = {"content": "Remember that Rose loved the lake.", "idempotency_key": "k"}
    assert client.post(f"/chat/{conversation.pk}/send", send).status_code == 404
    assert client.post(f"/chat/{conversation.pk}/send", send,
                       HTTP_HX_REQUEST="true").status_code == 404
    assert _written() == before
    assert not Message.objects.filter(conversation=conversation).exists()


def _written() -> tuple:
    """Every conversation row, message, memory and place: what a turn could write."""
    return (
        list(Conversation.objects.order_by("pk").values_list(
            "pk", "message_count", "last_message_at", "turn_count", "status", "updated_at")),
        Message.objects.count(),
        AgentMemory.objects.count(),
        Place.objects.count(),
    )


def test_anonymous_is_sent_to_sign_in(family):
    response = Client().get("/chat")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("legacy_id", ["not-a-uuid", "12345", "00000000-0000-0000-0000-00000000000g"])
def test_a_malformed_legacy_id_is_a_404_not_a_500(family, browser, legacy_id):
    assert browser.post("/chat/start", {"legacy_id": legacy_id, "title": "x"}).status_code == 404
    assert browser.get("/chat", {"legacy": legacy_id}).status_code == 404
    assert not Conversation.objects.exists()


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_member_of_one_legacy_lands_on_its_chat(family):
    ConversationFactory(user=family.member, legacy=family.legacy, title="Sunday calls")
    ConversationFactory(user=family.owner, legacy=family.legacy, title="Not the member's")
    response = _signed_in(family.member).get("/chat")
    assert response.status_code == 200
    assert response.context["chosen"] == family.legacy
    assert [c.title for c in response.context["conversations"]] == ["Sunday calls"]
    html = response.content.decode()
    assert f'<input type="hidden" name="legacy_id" value="{family.legacy.pk}">' in html
    assert "Start a new conversation" in html


def test_the_list_counts_messages_in_words_and_dates_like_the_other_pages(family):
    one = ConversationFactory(user=family.member, legacy=family.legacy, title="One")
    two = ConversationFactory(user=family.member, legacy=family.legacy, title="Two")
    Conversation.objects.filter(pk=one.pk).update(
        message_count=1, created_at=datetime(2026, 11, 25, 9, 5, tzinfo=UTC))
    Conversation.objects.filter(pk=two.pk).update(
        message_count=2, created_at=datetime(2026, 11, 24, 18, 30, tzinfo=UTC))
    html = _signed_in(family.member).get("/chat").content.decode()
    assert "1 message · <time" in html and "1 messages" not in html
    assert "2 messages · <time" in html
    assert '<time datetime="2026-11-25T09:05:00+00:00">25 Nov 2026, 09:05</time>' in html


def test_a_member_of_two_legacies_chooses_first(family):
    MembershipFactory(legacy=family.other_legacy, user=family.member)
    response = _signed_in(family.member).get("/chat")
    assert response.status_code == 200
    assert response.context["chosen"] is None
    assert "Start a new conversation" not in response.content.decode()
    chosen = _signed_in(family.member).get("/chat", {"legacy": family.other_legacy.pk})
    assert chosen.context["chosen"] == family.other_legacy


def test_a_user_of_no_legacy_is_told_so(family):
    response = _signed_in(family.stranger).get("/chat")
    assert response.status_code == 200
    assert response.context["chosen"] is None
    assert "You are not a member of any legacy yet." in response.content.decode()


def test_ending_a_conversation_closes_it_and_archives_what_was_said(
        family, browser, django_capture_on_commit_callbacks):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    browser.post(f"/chat/{conversation.pk}/send", {"content": "Rose married Harold in 1961."})
    assert "End this conversation" in browser.get(f"/chat/{conversation.pk}").content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        response = browser.post(f"/chat/{conversation.pk}/end")

    assert response.status_code == 302
    assert response["Location"] == f"/chat?legacy={family.legacy.pk}"
    # Where the facts will be: the legacy's facts page, linked.
    link = f"<a href=\"/legacies/{family.legacy.pk}/facts\">Rose Whitfield's facts page</a>"
    assert f"In a few seconds its facts appear on {link}." in browser.get(
        response["Location"]).content.decode()
    conversation.refresh_from_db()
    assert conversation.status == "shutdown_clean" and conversation.closed_at is not None
    assert conversation.chunks.exists()  # the job archived the tail
    assert "End this conversation" not in browser.get(f"/chat/{conversation.pk}").content.decode()


def test_ending_is_a_post_of_the_conversations_own_user(family, browser):
    conversation = ConversationFactory(user=family.member, legacy=family.legacy)
    assert browser.post(f"/chat/{conversation.pk}/end").status_code == 404
    own = ConversationFactory(user=family.owner, legacy=family.legacy)
    assert browser.get(f"/chat/{own.pk}/end").status_code == 405
    conversation.refresh_from_db()
    own.refresh_from_db()
    assert conversation.status == own.status == "active"
