"""The source of a fact, `/facts/<id>/source`: who may open it, and that it shows only the
messages of the fact's source range, never the rest of the author's conversation."""

import uuid

import pytest
from django.test import Client

from facts.models import LegacyFact
from tests.factories import ConversationFactory, LegacyFactFactory, MessageFactory

pytestmark = pytest.mark.django_db

TITLE = "A very private call about the will"


@pytest.fixture
def conversation(family):
    """Six messages of the owner's; the facts below come from messages 2 and 3."""
    conversation = ConversationFactory(legacy=family.legacy, user=family.owner, title=TITLE)
    for sequence in range(6):
        MessageFactory(
            conversation=conversation, sequence=sequence,
            role="user" if sequence % 2 == 0 else "assistant",
            content=f"Message number {sequence} <b>not bold</b>",
        )
    return conversation


def _fact(family, conversation, visibility: str) -> LegacyFact:
    return LegacyFactFactory(
        legacy=family.legacy, user=family.owner, category="hobby",
        content=f"Rose kept bees ({visibility}).", visibility=visibility,
        source_conversation=conversation, source_range_start=2, source_range_end=4,
    )


def _client(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def _source_url(fact: LegacyFact) -> str:
    return f"/facts/{fact.pk}/source"


@pytest.mark.parametrize(
    ("caller", "visibility", "status"),
    [
        ("owner", "private", 200),
        ("owner", "shared", 200),
        ("member", "shared", 200),
        ("member", "private", 404),
        ("stranger", "shared", 404),
        ("stranger", "private", 404),
        ("other_member", "shared", 404),
        ("other_member", "private", 404),
    ],
)
def test_who_may_open_the_source_of_a_fact(family, conversation, caller, visibility, status):
    fact = _fact(family, conversation, visibility)
    response = _client(getattr(family, caller)).get(_source_url(fact))
    assert response.status_code == status
    html = response.content.decode()
    if status == 200:
        assert f"Rose kept bees ({visibility})." in html
    else:
        assert "Rose kept bees" not in html and "Message number" not in html


def test_the_source_of_a_fact_needs_sign_in(family, conversation):
    fact = _fact(family, conversation, "shared")
    response = Client().get(_source_url(fact))
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next=/facts/{fact.pk}/source"


def test_unknown_or_malformed_ids_and_other_methods(family, conversation):
    fact = _fact(family, conversation, "shared")
    client = _client(family.member)
    assert client.get(f"/facts/{uuid.uuid4()}/source").status_code == 404
    assert client.get("/facts/not-a-uuid/source").status_code == 404
    plain = Client()
    plain.force_login(family.member)
    assert plain.post(_source_url(fact)).status_code == 405


def test_a_fellow_member_sees_only_the_messages_of_the_source_range(family, conversation):
    fact = _fact(family, conversation, "shared")
    html = _client(family.member).get(_source_url(fact)).content.decode()

    assert '<li id="m-2" class="msg role-user in-range">' in html
    assert '<li id="m-3" class="msg role-assistant in-range">' in html
    for sequence in (0, 1, 4, 5):
        assert f"Message number {sequence}" not in html
        assert f'id="m-{sequence}"' not in html
    assert "&lt;b&gt;not bold&lt;/b&gt;" in html and "<b>not bold</b>" not in html
    assert TITLE not in html
    assert '<strong class="author">owner</strong>' in html
    assert 'Messages 2–3 of one of <strong class="author">owner</strong>’s conversations' in html
    assert "The rest of the conversation stays private to owner." in html
    # The whole conversation stays the author's: no link to it for anyone else.
    assert f"/conversations/{conversation.pk}" not in html


def test_the_author_also_gets_a_link_to_the_whole_conversation(family, conversation):
    fact = _fact(family, conversation, "private")
    html = _client(family.owner).get(_source_url(fact)).content.decode()
    assert "Messages 2–3 of one of your conversations" in html
    assert f'href="/conversations/{conversation.pk}?from=2&amp;to=4#m-2"' in html
    assert "Message number 4" not in html


def test_tool_and_system_messages_of_the_range_are_not_shown(family, conversation):
    MessageFactory(conversation=conversation, sequence=6, role="tool",
                   content='{"memories": "her private note"}')
    MessageFactory(conversation=conversation, sequence=7, role="user", content="Bees again.")
    fact = _fact(family, conversation, "shared")
    LegacyFact.objects.filter(pk=fact.pk).update(source_range_start=6, source_range_end=8)
    html = _client(family.member).get(_source_url(fact)).content.decode()
    assert "her private note" not in html
    assert "Bees again." in html


def test_a_source_conversation_of_someone_else_is_never_shown(family):
    """Facts are their author's; a source that is not the author's conversation about the
    fact's legacy shows nothing, whatever the data says."""
    others = ConversationFactory(legacy=family.legacy, user=family.member, title=TITLE)
    MessageFactory(conversation=others, sequence=0, content="The member's own words.")
    fact = LegacyFactFactory(
        legacy=family.legacy, user=family.owner, visibility="shared",
        source_conversation=others, source_range_start=0, source_range_end=1,
    )
    html = _client(family.owner).get(_source_url(fact)).content.decode()
    assert "The member's own words." not in html
    assert "These messages are no longer there." in html


def test_facts_without_a_range_or_a_conversation_say_so(family, conversation):
    by_hand = LegacyFactFactory(legacy=family.legacy, user=family.owner, visibility="shared")
    no_range = LegacyFactFactory(
        legacy=family.legacy, user=family.owner, visibility="shared",
        source_conversation=conversation,
    )
    client = _client(family.member)
    assert "added by hand" in client.get(_source_url(by_hand)).content.decode()
    html = client.get(_source_url(no_range)).content.decode()
    assert "the messages it came from were not recorded" in html
    assert "Message number" not in html


def test_the_facts_page_links_shared_facts_of_others_to_their_source(family, conversation):
    shared = _fact(family, conversation, "shared")
    html = _client(family.member).get(f"/legacies/{family.legacy.pk}/facts").content.decode()
    assert (
        f'<a class="source" href="/facts/{shared.pk}/source">'
        "from one of their conversations, messages 2–3</a>"
    ) in html
    assert f"/conversations/{conversation.pk}" not in html

    # The author's own facts keep linking to the whole transcript.
    html = _client(family.owner).get(f"/legacies/{family.legacy.pk}/facts").content.decode()
    assert f'href="/conversations/{conversation.pk}?from=2&amp;to=4#m-2"' in html
    assert f"/facts/{shared.pk}/source" not in html
