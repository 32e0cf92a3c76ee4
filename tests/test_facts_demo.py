"""The facts demo data: both members' facts, some shared, some private, idempotent."""

import io

import pytest
from django.core.management import call_command

from facts import demo, selectors
from facts.models import Legacy, LegacyFact
from tests.factories import ConversationFactory, LegacyFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_seed_demo_gives_both_members_shared_and_private_facts():
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    call_command("seed_demo", stdout=io.StringIO())
    legacy = Legacy.objects.get(name="Rose Whitfield")
    counts = sorted(
        LegacyFact.objects.filter(legacy=legacy).values_list("user__username", "visibility")
    )
    assert counts == sorted(
        [("alice", "shared")] * 3 + [("alice", "private")] * 2
        + [("bob", "shared")] * 2 + [("bob", "private")] * 2
    )
    assert "Facts: 9 added, 9 about Rose Whitfield in all." in out.getvalue()
    bob = legacy.memberships.get(user__username="bob").user
    seen_by_bob = selectors.facts_visible_to(bob, legacy)
    assert seen_by_bob.count() == 4 + 3
    assert "Rose grew peonies by the back door." in [f.content for f in seen_by_bob]
    # The jobs of the demo conversations have not run (nothing is committed in a test), so
    # the sourced facts point at each member's first messages: alice's 34, bob's 10.
    sourced = LegacyFact.objects.filter(legacy=legacy, source_conversation__isnull=False)
    assert sorted(
        sourced.values_list("user__username", "category", "source_conversation__title",
                            "source_range_start", "source_range_end")
    ) == [
        ("alice", "hobby", "Remembering Mom (demo)", 0, 20),
        ("alice", "occupation", "Remembering Mom (demo)", 0, 20),
        ("bob", "other", "Mom's Sunday calls (demo)", 0, 10),
        ("bob", "preference", "Mom's Sunday calls (demo)", 0, 10),
        ("bob", "relationship", "Mom's Sunday calls (demo)", 0, 10),
    ]


def test_demo_facts_point_at_the_member_conversation_when_there_is_one():
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    legacy = LegacyFactory(name="Rose Whitfield", created_by=alice)
    MembershipFactory(legacy=legacy, user=bob)
    conversation = ConversationFactory(legacy=legacy, user=alice)

    lines = demo.seed(users={"alice": alice, "bob": bob}, legacy=legacy)
    assert lines == ["Facts: 9 added, 9 about Rose Whitfield in all."]
    sourced = LegacyFact.objects.filter(source_conversation=conversation)
    assert sorted(sourced.values_list("category", flat=True)) == ["hobby", "occupation"]
    assert set(sourced.values_list("user__username", flat=True)) == {"alice"}
    # No messages yet, so there is no range to point at.
    assert set(sourced.values_list("source_range_start", flat=True)) == {None}
    assert not LegacyFact.objects.filter(user=bob, source_conversation__isnull=False).exists()
    assert demo.seed(users={"alice": alice, "bob": bob}, legacy=legacy) == [
        "Facts: 0 added, 9 about Rose Whitfield in all."
    ]
