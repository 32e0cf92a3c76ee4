"""Demo data of the agent_memory app, written by `manage.py seed_demo` (idempotent)."""

from django.contrib.auth.models import AbstractBaseUser

from agent_memory import selectors, services
from agent_memory.models import AgentMemory
from conversations.models import Conversation
from facts.models import Legacy

# (category, subject, [content of version 1, 2, …], deleted?). The story is
# memory_site/demo/conversations.py's: Rose (1931–2019) is alice's and bob's mother.
DEMO_MEMORIES = {
    "alice": [
        ("person", "Rose", [
            "Rose Whitfield is Alice's mother",
            "Rose Whitfield is Alice's mother; she taught Alice to play the piano",
            "Rose Whitfield is Alice's mother; she taught Alice to play the piano at six and "
            "baked bread for the whole street every Sunday",
        ], False),
        ("project", "Memorial album", [
            "Alice is collecting family stories for an album about Rose",
            "Alice is collecting family stories for an album about Rose, for what would have "
            "been her 95th birthday",
        ], False),
        ("preference", None, ["Alice prefers short answers with dates written out"], False),
        ("context", None, ["Alice lives in Columbus, two hours from the family's lake cabin"],
         False),
        ("preference", None, ["Alice prefers to be called Ally"], True),
    ],
    "bob": [
        ("person", "Margaret", ["Margaret is Bob's aunt, the youngest of Rose's three sisters"],
         False),
        ("preference", None, ["Bob likes hearing Dad's old fishing stories from the lake cabin"],
         False),
    ],
}


def _first_conversation(user: AbstractBaseUser, legacy: Legacy) -> Conversation | None:
    return Conversation.objects.filter(user=user, legacy=legacy).order_by("created_at").first()


def seed(*, users: dict[str, AbstractBaseUser], legacy: Legacy) -> list[str]:
    """Create this app's demo rows for the demo users; return lines to print."""
    lines = []
    for username, memories in DEMO_MEMORIES.items():
        user = users.get(username)
        if user is None or AgentMemory.objects.filter(user=user).exists():
            continue
        conversation = _first_conversation(user, legacy)
        for category, subject, versions, deleted in memories:
            memory = services.memory_create(
                user=user, content=versions[0], category=category, subject=subject,
                source_conversation=conversation,
            )
            for content in versions[1:]:
                services.memory_update(
                    user=user, memory=memory, content=content, source_conversation=conversation
                )
            if deleted:
                services.memory_delete(user=user, memory=memory)
        lines.append(f"Agent memories for {username}: {len(memories)} (see /memories)")
    alice = users.get("alice")
    if alice is not None and selectors.place_for_user(user=alice, place_id="lake-cabin") is None:
        services.place_add(
            user=alice, place_id="lake-cabin", name="The lake cabin",
            notes="Rose and Henry's summer cabin on Lake Erie, near Port Clinton, Ohio",
            conversation=_first_conversation(alice, legacy),
        )
        lines.append("Place of interest for alice: The lake cabin")
    return lines
