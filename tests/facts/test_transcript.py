"""The transcript page a fact links to: messages anchored by sequence, the source range
highlighted, the summaries listed, and nobody but the conversation's own user."""

import uuid

import pytest
from django.test import Client

from tests.factories import (
    ConversationChunkFactory,
    ConversationFactory,
    ConversationMemoryFactory,
    LegacyFactFactory,
    MessageFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def conversation(family):
    conversation = ConversationFactory(
        legacy=family.legacy, user=family.owner, title="Talking about Grandma"
    )
    for sequence in range(6):
        MessageFactory(
            conversation=conversation, sequence=sequence,
            role="user" if sequence % 2 == 0 else "assistant",
            content=f"Message number {sequence} <b>not bold</b>",
        )
    ConversationMemoryFactory(
        conversation=conversation, memory_text="They talked about bees.",
        start_sequence=0, end_sequence=3, status="completed",
    )
    ConversationChunkFactory(
        conversation=conversation, user=family.owner, legacy=family.legacy,
        content="Grandma kept bees; the family loved the honey.", embedding=[0.1] * 1024,
        message_range_start=2, message_range_end=4,
    )
    return conversation


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_transcript_anchors_each_message_and_highlights_the_range(family, conversation):
    response = _client(family.owner).get(f"/conversations/{conversation.pk}?from=2&to=4")
    assert response.status_code == 200
    html = response.content.decode()
    for sequence in range(6):
        assert f'id="m-{sequence}"' in html
    assert '<li id="m-1" class="msg role-assistant">' in html
    assert '<li id="m-2" class="msg role-user in-range">' in html
    assert '<li id="m-3" class="msg role-assistant in-range">' in html
    assert '<li id="m-4" class="msg role-user">' in html
    assert "Highlighted: messages 2–3" in html
    assert "&lt;b&gt;not bold&lt;/b&gt;" in html and "<b>not bold</b>" not in html


def test_transcript_lists_the_rolling_and_archived_summaries(family, conversation):
    html = _client(family.owner).get(f"/conversations/{conversation.pk}").content.decode()
    assert "They talked about bees." in html
    assert "Grandma kept bees; the family loved the honey." in html
    assert 'href="?from=2&amp;to=4#m-2">messages 2–3</a>' in html
    assert 'href="?from=0&amp;to=4#m-0">messages 0–3</a>' in html
    assert "Highlighted" not in html


@pytest.mark.parametrize("query", ["?from=abc&to=4", "?from=-3", "?to=4"])
def test_a_malformed_range_highlights_nothing(family, conversation, query):
    response = _client(family.owner).get(f"/conversations/{conversation.pk}{query}")
    assert response.status_code == 200
    assert "in-range" not in response.content.decode()


def test_a_fact_links_to_its_source_range(family, conversation):
    LegacyFactFactory(
        legacy=family.legacy, user=family.owner, content="She kept bees.",
        source_conversation=conversation, source_range_start=2, source_range_end=4,
    )
    facts_page = _client(family.owner).get(f"/legacies/{family.legacy.pk}/facts")
    link = f"/conversations/{conversation.pk}?from=2&amp;to=4#m-2"
    assert f'href="{link}"' in facts_page.content.decode()


@pytest.mark.parametrize("caller", ["member", "stranger", "other_member"])
def test_only_the_conversation_user_sees_the_transcript(family, conversation, caller):
    response = _client(getattr(family, caller)).get(f"/conversations/{conversation.pk}")
    assert response.status_code == 404


def test_transcript_needs_sign_in_and_an_existing_conversation(family, conversation):
    response = Client().get(f"/conversations/{conversation.pk}")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert _client(family.owner).get(f"/conversations/{uuid.uuid4()}").status_code == 404
    assert _client(family.owner).post(f"/conversations/{conversation.pk}").status_code == 405
