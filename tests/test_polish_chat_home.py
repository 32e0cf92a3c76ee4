"""/chat chooses the legacy when the user belongs to one only; with several, the user picks."""

import pytest
from django.test import Client

from tests.factories import ConversationFactory, MembershipFactory

pytestmark = pytest.mark.django_db


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
