"""The source of a fact, `/facts/<id>/source`: who may open it; that its author sees the
messages of the fact's source range, never the rest of the conversation; and that a fellow
member sees only the author's own message(s) the fact was taken from."""

import uuid

import pytest
from django.test import Client

from facts.models import LegacyFact
from tests.factories import ConversationFactory, LegacyFactFactory, MessageFactory
from tests.support.csrf import signed_in

pytestmark = pytest.mark.django_db

TITLE = "A very private call about the will"

# The owner's conversation; the facts below come from messages 1–6 (range 1 to 7).
LINES = [
    ("user", "Before we start: the will is with the lawyer in Dayton."),
    ("assistant", "Of course. Tell me about Rose."),
    ("user", "Mum kept bees behind the barn, <b>three</b> hives."),
    ("assistant", "Bees! Did she keep the honey for herself?"),
    ("user", "She sold honey at the church fair; the bees once stung Henry."),
    ("assistant", "What else did she love?"),
    ("user", "Honestly, I miss her every day. Rose Whitfield was my whole world."),
    ("user", "Outside the range: she kept bees in 1980 too."),
]


@pytest.fixture
def conversation(family):
    conversation = ConversationFactory(legacy=family.legacy, user=family.owner, title=TITLE)
    for sequence, (role, content) in enumerate(LINES):
        MessageFactory(conversation=conversation, sequence=sequence, role=role, content=content)
    return conversation


def _fact(family, conversation, visibility: str, content: str = "") -> LegacyFact:
    return LegacyFactFactory(
        legacy=family.legacy, user=family.owner, category="hobby",
        content=content or f"Rose kept bees ({visibility}).", visibility=visibility,
        source_conversation=conversation, source_range_start=1, source_range_end=7,
    )


_client = signed_in


def _source_url(fact: LegacyFact) -> str:
    return f"/facts/{fact.pk}/source"


def _shown(html: str) -> list[int]:
    """The sequences of the messages the page shows."""
    return [sequence for sequence in range(len(LINES)) if f'id="m-{sequence}"' in html]


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
        assert "Rose kept bees" not in html and "Mum kept bees" not in html


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


def test_a_fellow_member_sees_only_the_users_message_the_fact_was_taken_from(
    family, conversation
):
    fact = _fact(family, conversation, "shared")
    response = _client(family.member).get(_source_url(fact))
    assert response.status_code == 200
    html = response.content.decode()

    # Not the assistant's reply that also speaks of bees, not the user's message that shares
    # one word with the fact, not the unrelated ones, nothing outside the range.
    assert _shown(html) == [2]
    assert '<li id="m-2" class="msg role-user in-range">' in html
    assert "Mum kept bees behind the barn, &lt;b&gt;three&lt;/b&gt; hives." in html
    for sequence, (_, content) in enumerate(LINES):
        if sequence != 2:
            assert content.replace("'", "&#x27;") not in html
    assert "Bees!" not in html and "sold honey" not in html and "lawyer" not in html
    assert TITLE not in html
    assert (
        'Taken from messages 1–6 of <strong class="author">owner</strong>’s conversation with '
        "the agent." in html
    )
    assert (
        "Below is only what owner said there that the fact comes from; the agent’s replies "
        "and the rest of the conversation stay private to owner." in html
    )
    # The whole conversation stays the author's: no link to it for anyone else.
    assert f"/conversations/{conversation.pk}" not in html


def test_the_facts_stemmed_words_choose_one_message_the_earliest_on_a_tie(family, conversation):
    sold = _fact(family, conversation, "shared", "Rose sold honey at the church fair.")
    assert _shown(_client(family.member).get(_source_url(sold)).content.decode()) == [4]

    # Two words each: "kept" and "bees" in message 2, "bees" and "stung" in message 4.
    both = _fact(family, conversation, "shared", "Rose kept bees that stung.")
    html = _client(family.member).get(_source_url(both)).content.decode()
    assert _shown(html) == [2]
    assert "Bees!" not in html and "stung Henry" not in html

    # Stemmed: "peonies" finds "peony".
    MessageFactory(conversation=conversation, sequence=8, role="user",
                   content="Mum loved her peony beds by the porch.")
    peonies = _fact(family, conversation, "shared", "Rose grew peonies.")
    LegacyFact.objects.filter(pk=peonies.pk).update(source_range_end=9)
    html = _client(family.member).get(_source_url(peonies)).content.decode()
    assert 'id="m-8"' in html and _shown(html) == []
    assert "Mum loved her peony beds by the porch." in html


def _said(conversation, start: int, *contents: str) -> None:
    """The user's messages `contents`, from sequence `start` on."""
    for sequence, content in enumerate(contents, start=start):
        MessageFactory(conversation=conversation, sequence=sequence, role="user", content=content)


def test_a_corrected_value_shows_the_correction_too(family, conversation):
    """Found by a new-user walkthrough: a family member opening the source of "… every
    Tuesday" saw only "… every Sunday.", the message the correction replaced."""
    _said(conversation, 20, "Rose sang in the church choir every Sunday.",
          "Actually it was Tuesdays, not Sundays.", "She loved the hymns.")
    fact = _fact(family, conversation, "shared", "Rose sang in the church choir every Tuesday.")
    LegacyFact.objects.filter(pk=fact.pk).update(source_range_start=20, source_range_end=23)
    html = _client(family.member).get(_source_url(fact)).content.decode()
    assert html.index("every Sunday.") < html.index("Actually it was Tuesdays, not Sundays.")
    assert "hymns" not in html
    # A message that only happens to say the fact's value is no correction of the first: it
    # stays private (found by a second hostile-member probe).
    MessageFactory(conversation=conversation, sequence=23, role="user",
                   content="Unrelated: my therapy is on Friday, keep that between us.")
    edited = _fact(family, conversation, "shared", "Rose sang in the church choir every Friday.")
    LegacyFact.objects.filter(pk=edited.pk).update(source_range_start=20, source_range_end=24)
    html = _client(family.member).get(_source_url(edited)).content.decode()
    assert "every Sunday." in html and "therapy" not in html
    # Nor one that names the replaced value but corrects nothing (found by a review).
    MessageFactory(conversation=conversation, sequence=24, role="user",
                   content="Rose's sister has chemo on Friday and on Sunday, don't tell anyone.")
    LegacyFact.objects.filter(pk=edited.pk).update(source_range_end=25)
    html = _client(family.member).get(_source_url(edited)).content.decode()
    assert "every Sunday." in html and "chemo" not in html


def test_a_common_word_shows_at_most_one_message_and_a_weak_match_none(family, conversation):
    _said(conversation, 20, "Rose was kind to the neighbours.", "The kind of day I hate: rain.",
          "My boss is not kind either.")
    kind = _fact(family, conversation, "shared", "Rose was kind.")
    LegacyFact.objects.filter(pk=kind.pk).update(source_range_start=20, source_range_end=23)
    html = _client(family.member).get(_source_url(kind)).content.decode()
    assert "Rose was kind to the neighbours." in html
    assert "rain" not in html and "boss" not in html
    # One word of four ("bees") is not enough to point at a message.
    weak = _fact(family, conversation, "shared", "Rose painted bees on teacups.")
    html = _client(family.member).get(_source_url(weak)).content.decode()
    assert _shown(html) == []
    assert "kept bees" not in html and "stung" not in html


def test_names_and_stopwords_alone_do_not_choose_a_message(family, conversation):
    """Message 6 says "Rose Whitfield was my whole world": the legacy's name and stopwords are
    in every message about her, so a fact sharing only those shows no message text."""
    fact = _fact(family, conversation, "shared", "Rose Whitfield was the one for all of us.")
    html = _client(family.member).get(_source_url(fact)).content.decode()
    assert _shown(html) == []
    assert 'class="messages"' not in html
    assert "whole world" not in html and "kept bees" not in html
    assert (
        'Taken from messages 1–6 of <strong class="author">owner</strong>’s conversation with '
        "the agent." in html
    )
    assert "The conversation stays private to owner." in html
    assert "These messages are no longer there." not in html


def test_the_author_sees_the_whole_range_and_what_the_family_sees(family, conversation):
    fact = _fact(family, conversation, "shared")
    html = _client(family.owner).get(_source_url(fact)).content.decode()
    assert _shown(html) == [1, 2, 3, 4, 5, 6]
    assert "Bees! Did she keep the honey for herself?" in html
    assert "Messages 1–6 of one of your conversations" in html
    assert f'href="/conversations/{conversation.pk}?from=1&amp;to=7#m-1"' in html
    assert "Family members who open this page see only your message marked" in html
    assert html.count("shown to the family</span>") == 1
    marked = html[html.index('id="m-2"'):html.index('id="m-3"')]
    assert "shown to the family</span>" in marked


def test_the_author_of_a_private_fact_gets_the_range_and_the_link(family, conversation):
    fact = _fact(family, conversation, "private")
    html = _client(family.owner).get(_source_url(fact)).content.decode()
    assert _shown(html) == [1, 2, 3, 4, 5, 6]
    assert "Messages 1–6 of one of your conversations" in html
    assert f'href="/conversations/{conversation.pk}?from=1&amp;to=7#m-1"' in html
    assert "Outside the range" not in html and "lawyer" not in html
    assert "shown to the family" not in html and "Family members" not in html


def test_tool_and_system_messages_of_the_range_are_not_shown(family, conversation):
    MessageFactory(conversation=conversation, sequence=8, role="tool",
                   content='{"memories": "her private note about the bees she kept"}')
    MessageFactory(conversation=conversation, sequence=9, role="system",
                   content="Bees kept here.")
    MessageFactory(conversation=conversation, sequence=10, role="user",
                   content="Mum kept bees again.")
    fact = _fact(family, conversation, "shared")
    LegacyFact.objects.filter(pk=fact.pk).update(source_range_start=8, source_range_end=11)
    for user in (family.member, family.owner):
        html = _client(user).get(_source_url(fact)).content.decode()
        assert "her private note" not in html and "Bees kept here." not in html
        assert "Mum kept bees again." in html


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
    html = _client(family.member).get(_source_url(fact)).content.decode()
    assert "The member's own words." not in html and 'class="messages"' not in html


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
    assert "kept bees" not in html


def test_the_facts_page_links_shared_facts_of_others_to_their_source(family, conversation):
    shared = _fact(family, conversation, "shared")
    html = _client(family.member).get(f"/legacies/{family.legacy.pk}/facts").content.decode()
    assert (
        f'<a class="source" href="/facts/{shared.pk}/source">'
        "from one of their conversations, messages 1–6</a>"
    ) in html
    assert f"/conversations/{conversation.pk}" not in html

    # The author's own facts keep linking to the whole transcript.
    html = _client(family.owner).get(f"/legacies/{family.legacy.pk}/facts").content.decode()
    assert f'href="/conversations/{conversation.pk}?from=1&amp;to=7#m-1"' in html
    assert f"/facts/{shared.pk}/source" not in html
