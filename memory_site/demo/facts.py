"""Demo data of the facts app, written by `manage.py seed_demo` (idempotent)."""

from django.contrib.auth.models import AbstractBaseUser

from conversations import selectors as conversation_selectors
from conversations.models import Conversation
from facts.models import Legacy, LegacyFact
from facts.services import fact_create

SHARED = LegacyFact.Visibility.SHARED
PRIVATE = LegacyFact.Visibility.PRIVATE

# (category, content, visibility, taken from the member's demo conversation if there is one).
# The story is memory_site/demo/conversations.py's: Rose is alice's and bob's mother.
DEMO_FACTS = {
    "alice": [
        ("personality", "{name} laughed easily and never held a grudge.", SHARED, False),
        ("hobby", "{name} grew peonies by the back door.", SHARED, True),
        ("milestone",
         "{name} married Henry Whitfield in June 1955 at the little church on Main Street.",
         SHARED, False),
        ("occupation", "{name} was a nurse at St. Mary's Hospital in Dayton for thirty years.",
         PRIVATE, True),
        ("habit", "{name} did the crossword in ink every Sunday morning.", PRIVATE, False),
    ],
    "bob": [
        ("relationship", "{name} called her sister Margaret every Sunday evening.", SHARED, True),
        ("preference", "{name} took her tea with honey, never sugar.", SHARED, True),
        ("hobby", "{name} sang alto in the church choir for thirty years.", PRIVATE, False),
        ("other", "{name} kept every birthday card she was ever sent.", PRIVATE, True),
    ],
}
DEMO_SOURCE_BATCH = 20


def _demo_source(
    user: AbstractBaseUser, legacy: Legacy
) -> tuple[Conversation | None, tuple[int, int] | None]:
    """The user's first conversation about the legacy and a message range of it, if any."""
    conversation = (
        conversation_selectors.conversations_for_user(user)
        .filter(legacy=legacy)
        .order_by("created_at")
        .first()
    )
    if conversation is None:
        return None, None
    chunk = conversation_selectors.archived_chunks_for_conversation(
        conversation=conversation
    ).first()
    if chunk is not None:
        return conversation, (chunk.message_range_start, chunk.message_range_end)
    count = conversation_selectors.messages_for_conversation(conversation=conversation).count()
    return conversation, ((0, min(count, DEMO_SOURCE_BATCH)) if count else None)


def seed(*, users: dict[str, AbstractBaseUser], legacy: Legacy) -> list[str]:
    """Facts of both demo members about the demo legacy, some shared, some private; a fact
    saved again is a duplicate and is left alone, so running twice adds nothing."""
    short_name = legacy.name.split()[0]
    created_count = 0
    for username, facts in DEMO_FACTS.items():
        user = users.get(username)
        if user is None:
            continue
        conversation, source_range = _demo_source(user, legacy)
        for category, content, visibility, from_conversation in facts:
            with_source = from_conversation and conversation is not None
            _, created = fact_create(
                legacy=legacy,
                user=user,
                category=category,
                content=content.format(name=short_name),
                visibility=visibility,
                source_conversation=conversation if with_source else None,
                source_range=source_range if with_source else None,
            )
            created_count += created
    total = LegacyFact.objects.filter(legacy=legacy).count()
    return [f"Facts: {created_count} added, {total} about {legacy.name} in all."]
