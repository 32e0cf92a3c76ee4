"""Demo data of the agent_memory app, written by `manage.py seed_demo` (idempotent)."""

from django.contrib.auth.models import AbstractBaseUser

from agent_memory import selectors, services
from agent_memory.models import AgentMemory
from conversations.models import Conversation
from facts.models import Legacy

# (category, subject, [content of version 1, 2, …], deleted?)
DEMO_MEMORIES = {
    "alice": [
        ("person", "Rose", [
            "Rose Whitfield is Alice's grandmother",
            "Rose Whitfield is Alice's grandmother; she taught Alice to bake bread",
            "Rose Whitfield is Alice's grandmother; she taught Alice to bake rye bread "
            "every Sunday",
        ], False),
        ("project", "Birthday album", [
            "Alice is collecting stories for Rose's 90th birthday album",
            "Alice is collecting stories for Rose's 90th birthday album, due in June",
        ], False),
        ("preference", None, ["Alice prefers short answers with dates written out"], False),
        ("context", None, ["Alice lives in Leeds, two hours from the lake cabin"], False),
        ("preference", None, ["Alice prefers to be called Ally"], True),
    ],
    "bob": [
        ("person", "Walter", ["Walter is Bob's uncle and Rose's younger brother"], False),
        ("preference", None, ["Bob likes hearing the old fishing stories at the lake"], False),
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
            notes="Rose's summer cabin on Lake Windermere",
            conversation=_first_conversation(alice, legacy),
        )
        lines.append("Place of interest for alice: The lake cabin")
    return lines
