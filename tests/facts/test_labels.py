"""One rule for a fact's mark: the prompt block, the context parts and the chat panel all say
"(shared)" for a shared fact and "(personal)" for a private one, whoever noted it."""

import re

import pytest
from django.test import Client

from tests.conftest import api_client_for
from tests.factories import ConversationFactory, LegacyFactFactory

pytestmark = pytest.mark.django_db

KEY = (
    "A fact marked (personal) is private to this user; a fact marked (shared) is visible to the "
    "whole family."
)
OWN_PRIVATE = "Rose kept her recipes in a tin."
OWN_SHARED = "Rose sang alto in the church choir."
OTHERS_SHARED = "Rose grew peonies by the porch."
OTHERS_PRIVATE = "Rose once crashed the Buick."


@pytest.fixture
def facts(family):
    for user, content, visibility in [
        (family.owner, OWN_PRIVATE, "private"),
        (family.owner, OWN_SHARED, "shared"),
        (family.member, OTHERS_SHARED, "shared"),
        (family.member, OTHERS_PRIVATE, "private"),
    ]:
        LegacyFactFactory(legacy=family.legacy, user=user, category="hobby", content=content,
                          visibility=visibility)


def _panel_marks(html: str) -> dict[str, str]:
    panel = html[html.index('id="context-facts"'):]
    panel = panel[: panel.index("</ul>")]
    return {
        content: mark
        for content, mark in re.findall(r'</span> (.+?) <span class="muted">\((.+?)\)</span>', panel)
    }


def test_the_prompt_the_parts_and_the_panel_mark_every_fact_alike(family, facts):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)

    context = api_client_for(family.owner).get(f"/api/ai/conversations/{conversation.pk}/context")
    assert context.status_code == 200
    body = context.json()
    assert {f["content"]: f["marked"] for f in body["parts"]["facts"]} == {
        OWN_PRIVATE: "personal", OWN_SHARED: "shared", OTHERS_SHARED: "shared",
    }
    assert [
        {k: f[k] for k in ("content", "visibility", "marked", "author", "is_mine")}
        for f in body["parts"]["facts"]
    ] == [
        {"content": OWN_PRIVATE, "visibility": "private", "marked": "personal",
         "author": "owner", "is_mine": True},
        {"content": OWN_SHARED, "visibility": "shared", "marked": "shared",
         "author": "owner", "is_mine": True},
        {"content": OTHERS_SHARED, "visibility": "shared", "marked": "shared",
         "author": "member", "is_mine": False},
    ]

    prompt = body["system_prompt"]
    assert f"- [hobby] {OWN_PRIVATE} (personal)\n" in prompt
    assert f"- [hobby] {OWN_SHARED} (shared)\n" in prompt
    assert f"- [hobby] {OTHERS_SHARED} (shared)\n" in prompt
    assert OTHERS_PRIVATE not in prompt

    client = Client()
    client.force_login(family.owner)
    page = client.get(f"/chat/{conversation.pk}")
    assert page.status_code == 200
    assert _panel_marks(page.content.decode()) == {
        OWN_PRIVATE: "personal",
        OWN_SHARED: "shared",
        OTHERS_SHARED: "shared",
    }
    assert '<span class="muted fact-author">noted by member</span>' in page.content.decode()


def test_a_fellow_members_view_follows_the_same_rule(family, facts):
    conversation = ConversationFactory(user=family.member, legacy=family.legacy)
    body = api_client_for(family.member).get(
        f"/api/ai/conversations/{conversation.pk}/context"
    ).json()
    marks = {f["content"]: (f["marked"], f["is_mine"]) for f in body["parts"]["facts"]}
    assert marks == {
        OWN_SHARED: ("shared", False),
        OTHERS_SHARED: ("shared", True),
        OTHERS_PRIVATE: ("personal", True),
    }
    assert f"- [hobby] {OTHERS_PRIVATE} (personal)\n" in body["system_prompt"]
    assert f"- [hobby] {OWN_SHARED} (shared)\n" in body["system_prompt"]


def test_the_prompt_says_what_the_marks_mean_once_and_nothing_else(family, facts):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    prompt = api_client_for(family.owner).get(
        f"/api/ai/conversations/{conversation.pk}/context"
    ).json()["system_prompt"]
    assert prompt.count("(personal) is") == 1 and prompt.count("(shared) is") == 1
    assert KEY in prompt
    # The key sits in the facts block's head, before the fence, so a budget cut keeps it.
    assert prompt.index(KEY) < prompt.index("<legacy_facts>")
    assert "shared by a family member" not in prompt and "noted by this user" not in prompt
