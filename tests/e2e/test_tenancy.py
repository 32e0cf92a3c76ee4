"""Authorization matrix of the foundation's endpoints: every route × method × kind of caller.

Conversations belong to the user who had them: a fellow member of the legacy sees
neither them nor their messages. Anything of another family is a 404, the same as
something that does not exist.
"""

import pytest

from conversations.models import Conversation, Message
from facts.models import Legacy, LegacyInvitation, LegacyMembership
from tests.conftest import api_client_for
from tests.factories import ConversationFactory, MessageFactory, UserFactory

pytestmark = pytest.mark.django_db

CALLERS = ["anonymous", "stranger", "other_family", "fellow_member", "owner"]


def _state() -> tuple:
    return (
        Legacy.objects.count(),
        LegacyMembership.objects.count(),
        LegacyInvitation.objects.count(),
        Conversation.objects.count(),
        Message.objects.count(),
    )


@pytest.fixture
def world(family):
    conversation = ConversationFactory(legacy=family.legacy, user=family.owner)
    MessageFactory(conversation=conversation, role="user", content="hi")
    UserFactory(username="cousin")
    users = {
        "anonymous": None,
        "stranger": family.stranger,
        "other_family": family.other_member,
        "fellow_member": family.member,
        "owner": family.owner,
    }
    return family, conversation, users


# (method, path template, body, {caller: expected status})
ROUTES = [
    ("get", "/api/legacies/{legacy}/members", None,
     {"anonymous": 401, "stranger": 404, "other_family": 404, "fellow_member": 200, "owner": 200}),
    ("post", "/api/legacies/{legacy}/invitations", {"username": "cousin", "role": "member"},
     {"anonymous": 401, "stranger": 404, "other_family": 404, "fellow_member": 403, "owner": 202}),
    ("post", "/api/ai/conversations", {"legacy_id": "{legacy}"},
     {"anonymous": 401, "stranger": 404, "other_family": 404, "fellow_member": 201, "owner": 201}),
    ("get", "/api/ai/conversations/{conversation}", None,
     {"anonymous": 401, "stranger": 404, "other_family": 404, "fellow_member": 404, "owner": 200}),
    ("get", "/api/ai/conversations/{conversation}/messages", None,
     {"anonymous": 401, "stranger": 404, "other_family": 404, "fellow_member": 404, "owner": 200}),
    ("post", "/api/ai/conversations/{conversation}/messages", {"role": "user", "content": "x"},
     {"anonymous": 401, "stranger": 404, "other_family": 404, "fellow_member": 404, "owner": 201}),
]


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize(("method", "template", "body", "expected"), ROUTES)
def test_route_matrix(world, caller, method, template, body, expected):
    family, conversation, users = world
    path = template.format(legacy=family.legacy.pk, conversation=conversation.pk)
    if body is not None:
        body = {k: v.format(legacy=family.legacy.pk) for k, v in body.items()}
    client = api_client_for(users[caller])
    before = _state()
    response = getattr(client, method)(path, body, format="json") if body else getattr(
        client, method
    )(path)
    assert response.status_code == expected[caller], response.content
    if expected[caller] >= 400:
        assert _state() == before
        detail = {
            401: "Authentication credentials were not provided.",
            403: "Only the legacy's owner can invite people.",
            404: "Not found.",
        }[expected[caller]]
        assert response.json()["detail"] == detail


@pytest.mark.parametrize("caller", ["stranger", "other_family", "fellow_member"])
def test_lists_never_show_another_users_conversations(world, caller):
    family, conversation, users = world
    body = api_client_for(users[caller]).get("/api/ai/conversations").json()
    assert body == {"conversations": [], "total": 0, "limit": 50, "offset": 0}


def test_legacy_lists_show_only_memberships(world):
    family, _, users = world
    for caller in ("stranger",):
        assert api_client_for(users[caller]).get("/api/legacies").json()["total"] == 0
    names = {
        item["name"]
        for item in api_client_for(users["other_family"]).get("/api/legacies").json()["legacies"]
    }
    assert names == {"Walter Brandt"}


def test_a_removed_member_loses_access_to_their_own_conversations(world):
    family, _, users = world
    conversation = ConversationFactory(legacy=family.legacy, user=family.member)
    LegacyMembership.objects.filter(legacy=family.legacy, user=family.member).delete()
    client = api_client_for(family.member)
    assert client.get(f"/api/ai/conversations/{conversation.pk}").status_code == 404
