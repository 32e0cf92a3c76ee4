"""`seed_demo` gives alice and bob memories (one with three versions) and a place, once."""

import io

import pytest
from django.core.management import call_command

from agent_memory import selectors
from agent_memory.models import AgentMemory, AgentMemoryVersion, Place, PlaceMention
from tests.conftest import api_client_for

pytestmark = pytest.mark.django_db


def test_seed_demo_memories_are_real_and_idempotent(django_user_model):
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    counts = (AgentMemory.objects.count(), Place.objects.count(), PlaceMention.objects.count())
    call_command("seed_demo", stdout=io.StringIO())
    assert (AgentMemory.objects.count(), Place.objects.count(),
            PlaceMention.objects.count()) == counts
    assert "Agent memories for alice: 5 (see /memories)" in out.getvalue()

    alice = django_user_model.objects.get(username="alice")
    listing = api_client_for(alice).get("/api/memory").json()
    assert listing["total"] == 4
    rose = next(m for m in listing["memories"] if m["subject"] == "Rose")
    assert rose["version"] == 3
    assert "[Rose] Rose Whitfield is Alice's mother; she taught Alice to play the piano at six" \
        in selectors.build_memory_context(alice)
    assert selectors.build_places_context(alice).startswith("PLACES OF INTEREST:")
    assert selectors.deleted_memories_for_user(alice).count() == 1
    bob = django_user_model.objects.get(username="bob")
    bobs = api_client_for(bob).get("/api/memory").json()
    assert bobs["total"] == 2
    assert sorted(m["content"] for m in bobs["memories"]) == [
        "Bob likes hearing Dad's old fishing stories from the lake cabin",
        "Margaret is Bob's aunt, the youngest of Rose's three sisters",
    ]
    # Memories point at the member's own demo conversation.
    assert set(
        AgentMemoryVersion.objects.filter(memory__user=bob).values_list(
            "source_conversation__title", flat=True)
    ) == {"Mom's Sunday calls (demo)"}
