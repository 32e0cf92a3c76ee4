"""The conversations app's demo data: a closed conversation whose jobs make summaries, chunks and facts."""

import pytest

from conversations import demo
from conversations.models import Conversation
from facts.models import LegacyFact
from tests.factories import LegacyFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_demo_conversation_is_archived_and_idempotent(django_capture_on_commit_callbacks):
    alice = UserFactory(username="alice")
    legacy = LegacyFactory(name="Rose Whitfield", created_by=alice)
    with django_capture_on_commit_callbacks(execute=True):
        lines = demo.seed(users={"alice": alice}, legacy=legacy)
    conversation = Conversation.objects.get(title=demo.DEMO_TITLE)
    assert lines == [
        f"Conversation {demo.DEMO_TITLE!r} (alice, closed): id={conversation.pk} messages=34; "
        "its summaries and chunks are made by the worker"
    ]
    assert conversation.status == "shutdown_clean"
    assert list(conversation.chunks.values_list("message_range_start", "message_range_end")) == [
        (0, 20), (20, 34)]
    assert set(conversation.memories.values_list("status", flat=True)) == {"completed"}
    facts = set(LegacyFact.objects.filter(user=alice).values_list("content", flat=True))
    assert "Rose retired in 1994 and moved to Florida." in facts
    assert demo.seed(users={"alice": alice}, legacy=legacy) == lines
    assert Conversation.objects.count() == 1
