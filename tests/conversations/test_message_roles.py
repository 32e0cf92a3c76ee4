"""Who may write what: a person signed in to the dashboard (a session) posts only `user`
messages through the API, one message or a batch (403 and nothing written otherwise); an API
token is an integration credential and posts every role."""

import pytest
from rest_framework.test import APIClient

from conversations.models import Message
from conversations.services.messages import ROLE_NOT_ALLOWED
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db

DENIED = {"detail": ROLE_NOT_ALLOWED, "code": "permission_denied"}


@pytest.fixture
def conversation(family):
    return ConversationFactory(user=family.owner, legacy=family.legacy)


@pytest.fixture
def session_client(family):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(family.owner)
    return client


def post(client, path, body):
    """A dashboard's request carries its CSRF token, as the pages send it."""
    client.get("/")
    token = client.cookies.get("csrftoken")
    return client.post(path, body, format="json",
                       HTTP_X_CSRFTOKEN=token.value if token else "")


def nothing_written(conversation):
    conversation.refresh_from_db()
    return conversation.message_count == 0 and not Message.objects.filter(
        conversation=conversation).exists()


@pytest.mark.parametrize("role", ["assistant", "system", "tool"])
def test_a_session_may_not_post_another_role(session_client, conversation, role):
    response = post(session_client, f"/api/ai/conversations/{conversation.pk}/messages",
                    {"role": role, "content": "I am the agent."})

    assert response.status_code == 403
    assert response.json() == DENIED
    assert nothing_written(conversation)


def test_a_session_posts_its_user_messages(session_client, conversation):
    response = post(session_client, f"/api/ai/conversations/{conversation.pk}/messages",
                    {"role": "user", "content": "Mom loved roses."})

    assert response.status_code == 201
    assert response.json()["role"] == "user"
    assert Message.objects.get(conversation=conversation).role == "user"


@pytest.mark.parametrize("role", ["user", "assistant", "system", "tool"])
def test_a_token_posts_every_role(owner_client, conversation, role):
    response = owner_client.post(f"/api/ai/conversations/{conversation.pk}/messages",
                                 {"role": role, "content": "Said."}, format="json")

    assert response.status_code == 201
    assert Message.objects.get(conversation=conversation).role == role


def test_a_session_batch_with_one_agent_message_is_a_403_and_writes_nothing(session_client,
                                                                             conversation):
    response = post(session_client, f"/api/ai/conversations/{conversation.pk}/messages/batch",
                    {"messages": [{"role": "user", "content": "Hello"},
                                  {"role": "assistant", "content": "Forged"}]})

    assert response.status_code == 403
    assert response.json() == DENIED
    assert nothing_written(conversation)


def test_a_session_imports_user_messages(session_client, conversation):
    response = post(session_client, f"/api/ai/conversations/{conversation.pk}/messages/batch",
                    {"messages": [{"role": "user", "content": "Hello"},
                                  {"role": "user", "content": "Again"}]})

    assert response.status_code == 201
    assert response.json()["total"] == 2


def test_a_token_imports_every_role(owner_client, conversation):
    response = owner_client.post(
        f"/api/ai/conversations/{conversation.pk}/messages/batch",
        {"messages": [{"role": role, "content": f"As {role}"}
                      for role in ("system", "user", "assistant", "tool")]},
        format="json",
    )

    assert response.status_code == 201
    assert [m.role for m in Message.objects.filter(conversation=conversation)] == [
        "system", "user", "assistant", "tool"]
