"""The conversations app's demo data: closed conversations whose jobs make summaries, chunks and facts."""

import re

import pytest

from conversations import demo
from conversations.models import Conversation
from facts.models import LegacyFact
from tests.factories import LegacyFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_demo_conversations_are_archived_and_idempotent(django_capture_on_commit_callbacks):
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    legacy = LegacyFactory(name="Rose Whitfield", created_by=alice)
    MembershipFactory(legacy=legacy, user=bob)
    users = {"alice": alice, "bob": bob}
    with django_capture_on_commit_callbacks(execute=True):
        lines = demo.seed(users=users, legacy=legacy)
    alices = Conversation.objects.get(title=demo.DEMO_TITLE)
    bobs = Conversation.objects.get(title=demo.BOB_DEMO_TITLE)
    assert lines == [
        f"Conversation {demo.DEMO_TITLE!r} (alice, closed): id={alices.pk} messages=34; "
        "its summaries and chunks are made by the worker",
        f"Conversation {demo.BOB_DEMO_TITLE!r} (bob, closed): id={bobs.pk} messages=10; "
        "its summaries and chunks are made by the worker",
    ]
    assert (alices.user, bobs.user) == (alice, bob)
    assert {alices.status, bobs.status} == {"shutdown_clean"}
    assert list(alices.chunks.values_list("message_range_start", "message_range_end")) == [
        (0, 20), (20, 34)]
    assert list(bobs.chunks.values_list("message_range_start", "message_range_end")) == [(0, 10)]
    assert set(alices.memories.values_list("status", flat=True)) == {"completed"}
    assert set(bobs.memories.values_list("status", flat=True)) == {"completed"}

    alices_facts = set(LegacyFact.objects.filter(user=alice).values_list("content", flat=True))
    assert {
        "Rose retired in 1994 and moved to Florida.",
        "Rose grew peonies by the back door.",
        "Rose married Dad, Henry Whitfield, in June 1955 at the little church on Main Street.",
        "Rose was born in 1931 on a farm in Ohio.",
        "Rose passed away in 2019.",
    } <= alices_facts
    # No fact keeps an object pronoun that points at nothing ("Rose grew them…").
    assert not [fact for fact in alices_facts if re.search(r"\b(them|those|it)\b(?! was)", fact)]
    assert set(
        LegacyFact.objects.filter(user=bob).values_list(
            "content", "source_conversation", "source_range_start", "source_range_end")
    ) == {
        ("Rose called her sister Margaret every Sunday evening.", bobs.pk, 0, 10),
        ("Rose took her tea with honey, never sugar.", bobs.pk, 0, 10),
        ("Rose kept every birthday card she was ever sent.", bobs.pk, 0, 10),
    }

    # A second run adds nothing and says what the jobs have made.
    assert demo.seed(users=users, legacy=legacy) == [
        f"Conversation {demo.DEMO_TITLE!r} (alice, closed): id={alices.pk} messages=34 "
        "summaries=1 chunks=2 (all archived)",
        f"Conversation {demo.BOB_DEMO_TITLE!r} (bob, closed): id={bobs.pk} messages=10 "
        "summaries=1 chunks=1 (all archived)",
    ]
    assert Conversation.objects.count() == 2
