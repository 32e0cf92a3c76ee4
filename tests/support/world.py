"""The world of the /api/me/data tests: the caller's rows, a fellow member's, another family's.

Every row of someone other than the caller carries a canary word, so a test can say that
none of it reached the caller's export.
"""

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import Model
from rest_framework.authtoken.models import Token

from agent_memory.models import AgentMemory, AgentMemoryVersion, Place, PlaceMention
from agent_memory.services import memory_create, memory_delete, memory_update, place_add
from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message
from facts.models import Legacy, LegacyFact, LegacyMembership
from tests.conftest import Family
from tests.factories import (
    ConversationFactory,
    ConversationMemoryFactory,
    LegacyFactFactory,
    MessageFactory,
)
from tests.support.chunks import chunk_for

MEMBER_CANARY = "MEMBERCANARY"
OTHER_CANARY = "OTHERFAMILYCANARY"

MODELS: list[type[Model]] = [
    Legacy, LegacyMembership, LegacyFact, Conversation, Message, ConversationMemory,
    ConversationChunk, AgentMemory, AgentMemoryVersion, Place, PlaceMention,
]


@dataclass
class MeWorld:
    family: Family
    conversation: Conversation
    messages: list[Message]
    summary: ConversationMemory
    chunk: ConversationChunk
    private_fact: LegacyFact
    shared_fact: LegacyFact
    memory: AgentMemory
    deleted_memory: AgentMemory
    place: Place
    member_conversation: Conversation
    member_shared_fact: LegacyFact
    member_private_fact: LegacyFact


def conversation_with_messages(*, legacy: Legacy, user, contents: list[str]) -> Conversation:
    conversation = ConversationFactory(legacy=legacy, user=user, title=f"About {legacy.name}")
    for sequence, content in enumerate(contents):
        MessageFactory(
            conversation=conversation, sequence=sequence,
            role="user" if sequence % 2 == 0 else "assistant", content=content,
        )
    Conversation.objects.filter(pk=conversation.pk).update(message_count=len(contents))
    conversation.refresh_from_db()
    return conversation


def build_world(family: Family) -> MeWorld:
    """The owner's data (the caller), the fellow member's and the other family's."""
    owner, member = family.owner, family.member
    conversation = conversation_with_messages(
        legacy=family.legacy, user=owner,
        contents=["Rose grew dahlias.", "Tell me more about her garden.", "She won prizes."],
    )
    messages = list(conversation.messages.order_by("sequence"))
    Message.objects.filter(pk=messages[1].pk).update(metadata={"provider": "extractive"})
    Conversation.objects.filter(pk=conversation.pk).update(
        active_topics=["garden"], last_intent="share_memory", turn_count=1
    )
    conversation.refresh_from_db()
    summary = ConversationMemoryFactory(
        conversation=conversation, memory_text="Rose grew prize-winning dahlias.",
        start_sequence=0, end_sequence=2, status=ConversationMemory.Status.COMPLETED,
        generation_time_ms=12,
    )
    chunk = chunk_for(conversation, 0, 2, "The user talked about Rose's dahlias.")
    private_fact = LegacyFactFactory(
        legacy=family.legacy, user=owner, category="hobby", content="Rose grew dahlias.",
        source_conversation=conversation, source_range_start=0, source_range_end=2,
    )
    shared_fact = LegacyFactFactory(
        legacy=family.legacy, user=owner, category="milestone",
        content="Rose won the county show in 1972.", visibility="shared",
    )
    memory = memory_create(
        user=owner, content="My grandmother was Rose.", category="person", subject="Rose",
        source_conversation=conversation, source_message=messages[0],
    )
    memory_update(user=owner, memory=memory, content="My grandmother Rose grew dahlias.")
    deleted_memory = memory_create(user=owner, content="I prefer short answers.",
                                   category="preference")
    memory_delete(user=owner, memory=deleted_memory)
    place, _ = place_add(
        user=owner, place_id="kew", name="Kew Gardens", notes="Her favourite",
        conversation=conversation, message=messages[2],
    )

    member_conversation = conversation_with_messages(
        legacy=family.legacy, user=member, contents=[f"{MEMBER_CANARY} my own chat"],
    )
    chunk_for(member_conversation, 0, 1, f"{MEMBER_CANARY} chunk")
    member_shared_fact = LegacyFactFactory(
        legacy=family.legacy, user=member, content=f"{MEMBER_CANARY} shared fact",
        visibility="shared",
    )
    member_private_fact = LegacyFactFactory(
        legacy=family.legacy, user=member, content=f"{MEMBER_CANARY} private fact",
    )
    memory_create(user=member, content=f"{MEMBER_CANARY} memory", category="context")
    place_add(user=member, place_id="kew", name=f"{MEMBER_CANARY} Kew",
              conversation=member_conversation)

    other_conversation = conversation_with_messages(
        legacy=family.other_legacy, user=family.other_member,
        contents=[f"{OTHER_CANARY} chat", f"{OTHER_CANARY} reply"],
    )
    ConversationMemoryFactory(
        conversation=other_conversation, memory_text=f"{OTHER_CANARY} summary",
        start_sequence=0, end_sequence=1, status=ConversationMemory.Status.COMPLETED,
    )
    LegacyFactFactory(legacy=family.other_legacy, user=family.other_member,
                      content=f"{OTHER_CANARY} shared fact", visibility="shared")
    memory_create(user=family.other_member, content=f"{OTHER_CANARY} memory", category="project")

    for row in (summary, chunk, private_fact, shared_fact, memory, deleted_memory, place):
        row.refresh_from_db()
    return MeWorld(
        family=family, conversation=conversation, messages=messages, summary=summary,
        chunk=chunk, private_fact=private_fact, shared_fact=shared_fact, memory=memory,
        deleted_memory=deleted_memory, place=place, member_conversation=member_conversation,
        member_shared_fact=member_shared_fact, member_private_fact=member_private_fact,
    )


def rows_by_model() -> dict[str, set[str]]:
    """The primary keys of every row of the project's models: the whole state, to compare."""
    return {
        model._meta.label: {str(pk) for pk in model.objects.values_list("pk", flat=True)}
        for model in MODELS
    }


def whole_state() -> dict:
    """rows_by_model plus what an erase changes in place: roles, creators, tokens, profiles."""
    return {
        "rows": rows_by_model(),
        "roles": set(LegacyMembership.objects.values_list("legacy_id", "user_id", "role")),
        "creators": set(Legacy.objects.values_list("pk", "created_by_id")),
        "tokens": set(Token.objects.values_list("key", "user_id")),
        "profiles": set(User.objects.values_list("username", "email", "first_name", "last_name")),
    }
