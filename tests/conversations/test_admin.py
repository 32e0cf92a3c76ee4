"""The admin: messages are view-only (the log is append-only); failing archives are easy to find;
failed or stuck summaries are listed and retried."""

from datetime import timedelta

import pytest

from conversations import selectors
from conversations.models import Conversation, ConversationMemory, Message
from conversations.services import message_append, summarization
from tests.factories import (
    ConversationFactory,
    ConversationMemoryFactory,
    UserFactory,
    import_messages,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def message(family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    message, _ = message_append(conversation=conversation, role="user",
                                content="Rose loved the lake.")
    return message


def test_staff_can_read_a_message_but_not_edit_it(admin_client, message):
    url = f"/admin/conversations/message/{message.pk}/change/"

    page = admin_client.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    assert "Rose loved the lake." in body
    assert 'name="_save"' not in body and 'name="content"' not in body

    response = admin_client.post(url, {
        "conversation": str(message.conversation_id), "sequence": 7, "role": "assistant",
        "content": "Rewritten history.", "token_count": 1, "metadata": "{}",
    })
    assert response.status_code == 403
    message.refresh_from_db()
    assert (message.sequence, message.role, message.content) == (0, "user",
                                                                  "Rose loved the lake.")


def test_staff_can_neither_add_nor_delete_messages(admin_client, message):
    changelist = admin_client.get("/admin/conversations/message/")
    assert changelist.status_code == 200
    assert 'value="delete_selected"' not in changelist.content.decode()
    assert admin_client.get("/admin/conversations/message/add/").status_code == 403
    assert admin_client.post("/admin/conversations/message/add/", {
        "conversation": str(message.conversation_id), "sequence": 1, "role": "user",
        "content": "Inserted.", "token_count": 1, "metadata": "{}",
    }).status_code == 403
    delete_url = f"/admin/conversations/message/{message.pk}/delete/"
    assert admin_client.post(delete_url, {"post": "yes"}).status_code == 403
    response = admin_client.post("/admin/conversations/message/", {
        "action": "delete_selected", "_selected_action": [str(message.pk)], "post": "yes",
    })
    # Not an action of this admin: the list is shown again and nothing is deleted.
    assert response.status_code == 200
    assert list(Message.objects.values_list("content", flat=True)) == ["Rose loved the lake."]


def test_staff_find_conversations_whose_archiving_keeps_failing(admin_client, message):
    failing = message.conversation
    Conversation.objects.filter(pk=failing.pk).update(
        archive_failures=3, archive_error="LLMError: timed out"
    )
    healthy = ConversationFactory(title="All fine")
    response = admin_client.get("/admin/conversations/conversation/?archiving=failing")
    assert response.status_code == 200
    shown = {c.pk for c in response.context["cl"].result_list}
    assert shown == {failing.pk}
    assert healthy.pk not in shown
    page = admin_client.get(f"/admin/conversations/conversation/{failing.pk}/change/")
    assert "LLMError: timed out" in page.content.decode()
    assert 'name="archive_failures"' not in page.content.decode()


@pytest.fixture
def conversation(family):
    return ConversationFactory(legacy=family.legacy, user=family.owner)


@pytest.fixture
def staff_client(client):
    admin = UserFactory(username="support", is_staff=True, is_superuser=True)
    client.force_login(admin)
    return client


def _messages(conversation, count):
    import_messages(conversation, (("user" if i % 2 == 0 else "assistant",
                                    f"Mom was a nurse, line {i}.") for i in range(count)))


def test_admin_lists_failed_and_stuck_and_retries_them(staff_client, conversation,
                                                       django_capture_on_commit_callbacks):
    _messages(conversation, 8)
    failed = ConversationMemoryFactory(
        conversation=conversation, start_sequence=0, end_sequence=7, status="failed",
        error="LLMError: boom")
    stuck = summarization.rolling_summary_begin(conversation=conversation)
    ConversationMemory.objects.filter(pk=stuck.pk).update(
        created_at=stuck.created_at - timedelta(minutes=10))
    done = ConversationMemoryFactory(
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
    latest = selectors.latest_completed_rolling_summary(conversation=conversation)
    assert (latest.end_sequence, latest.base_memory_id) == (7, done.pk)


def test_admin_retry_leaves_a_running_summary_alone(staff_client, conversation):
    _messages(conversation, 8)
    running = summarization.rolling_summary_begin(conversation=conversation)
    response = staff_client.post("/admin/conversations/conversationmemory/", {
        "action": "retry_summaries", "_selected_action": [str(running.pk)]}, follow=True)
    assert "Retrying 0 summaries; 1 skipped" in response.content.decode()
    running.refresh_from_db()
    assert running.status == "processing"
