"""The admin: messages are view-only (the log is append-only); failing archives are easy to find."""

import pytest

from conversations.models import Conversation, Message
from conversations.services import message_append
from tests.factories import ConversationFactory

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
