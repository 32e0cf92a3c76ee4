"""Reads of agent memories and places, always scoped to their user; `memory_document(user)` is
seed 001's document. The prompt blocks of both are rendered by conversations.prompt."""

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Count, F, Model, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.utils import timezone

from agent_memory.models import (
    SHORT_ID_ALPHABET,
    SHORT_ID_LENGTH,
    AgentMemory,
    AgentMemoryVersion,
    Place,
    PlaceMention,
)
from agent_memory.serializers import document_token_count
from memory_site.core.errors import NotFound
from memory_site.core.sql import quoted_table
from memory_site.core.text import comparison_key

MEMORY_DOCUMENT_SCHEMA_VERSION = "1.0"

_SHORT_ID = re.compile(f"[{re.escape(SHORT_ID_ALPHABET)}]{{{SHORT_ID_LENGTH}}}")

# Deterministic order (seed 003): category, then created_at; the id breaks exact ties.
MEMORY_ORDER = ("category", "created_at", "id")


def annotate_current(memories: QuerySet[AgentMemory]) -> QuerySet[AgentMemory]:
    """Each memory with its current `content`, `version` number, `updated_at` and who made
    that version (`changed_by`, a ChangeOrigin)."""
    latest = AgentMemoryVersion.objects.filter(memory=OuterRef("pk")).order_by("-version_number")
    return memories.annotate(
        content=Subquery(latest.values("content")[:1]),
        version=Subquery(latest.values("version_number")[:1]),
        updated_at=Subquery(latest.values("created_at")[:1]),
        changed_by=Subquery(latest.values("origin")[:1]),
    )


def memories_for_user(user: AbstractBaseUser) -> QuerySet[AgentMemory]:
    """Every memory of `user`, deleted ones included, with current content, version and
    updated_at annotated."""
    if not user.is_authenticated:
        return AgentMemory.objects.none()
    return annotate_current(AgentMemory.objects.filter(user=user))


def active_memories_for_user(user: AbstractBaseUser) -> QuerySet[AgentMemory]:
    """The user's active memories in seed 003's order: category, then created_at."""
    return memories_for_user(user).filter(deleted_at__isnull=True).order_by(*MEMORY_ORDER)


def active_memories_by_category(user: AbstractBaseUser) -> list[tuple[str, list[AgentMemory]]]:
    """The active memories grouped by category, categories and memories in seed 003's order."""
    grouped: dict[str, list[AgentMemory]] = defaultdict(list)
    for memory in active_memories_for_user(user):
        grouped[memory.category].append(memory)
    return list(grouped.items())


def _tables() -> dict[str, str]:
    return {
        "memories": quoted_table(AgentMemory),
        "versions": quoted_table(AgentMemoryVersion),
        "places": quoted_table(Place),
        "mentions": quoted_table(PlaceMention),
    }


# active_memories_for_user in plain SQL: MEMORY_ORDER, the latest version's content.
_ACTIVE_MEMORIES_SQL = """
SELECT coalesce(json_agg(json_build_array(m.id, m.category, m.subject, v.content)
                         ORDER BY m.category, m.created_at, m.id), '[]'::json)
FROM {memories} m
LEFT JOIN LATERAL (SELECT content FROM {versions} WHERE memory_id = m.id
                   ORDER BY version_number DESC LIMIT 1) v ON true
WHERE m.user_id = %(user_id)s AND m.deleted_at IS NULL
"""


def active_memories_sql() -> str:
    """active_memories_for_user(user) as SQL of one json value, for %(user_id)s: a statement
    that reads several blocks of the prompt at once selects it as a column, and
    memories_from_json makes the memories."""
    return _ACTIVE_MEMORIES_SQL.format(**_tables())


def memories_from_json(rows: list[list[Any]], *, user_id: int) -> list[AgentMemory]:
    """The memories of active_memories_sql's value, in its order, with their current
    `content` (the prompt's columns; the others load on access)."""
    memories = []
    for memory_id, category, subject, content in rows:
        memory = AgentMemory.from_db(
            connection.alias, ("id", "user_id", "category", "subject"),
            (memory_id, user_id, category, subject),
        )
        memory.content = content
        memories.append(memory)
    return memories


def deleted_memories_for_user(user: AbstractBaseUser) -> QuerySet[AgentMemory]:
    """Deleted (and evicted) memories, most recently deleted first, versions prefetched."""
    return (
        memories_for_user(user)
        .filter(deleted_at__isnull=False)
        .prefetch_related(_versions_prefetch())
        .order_by("-deleted_at", "id")
    )


# The user messages of a version's source conversation up to its source message: its turn.
_TURN_MESSAGES = "source_message__conversation__messages"


def _versions_prefetch() -> Prefetch:
    """Each version with its source conversation and message and `turn_number`: the how-many-th
    user message of the conversation its source message is (None without one)."""
    return Prefetch(
        "versions",
        queryset=AgentMemoryVersion.objects.select_related(
            "source_conversation", "source_message"
        ).annotate(
            turn_number=Count(_TURN_MESSAGES, filter=Q(**{
                f"{_TURN_MESSAGES}__role": "user",
                f"{_TURN_MESSAGES}__sequence__lte": F("source_message__sequence"),
            }))
        ).order_by("version_number"),
    )


def turn_number(message: Model | None) -> int | None:
    """The how-many-th user message of its conversation `message` is (the turn it began)."""
    if message is None:
        return None
    return message.conversation.messages.filter(
        role="user", sequence__lte=message.sequence
    ).count()


def memory_for_user(*, user: AbstractBaseUser, memory_id: object) -> AgentMemory:
    """One memory of `user` (also a deleted one) with its versions; NotFound otherwise,
    the same as if it did not exist (also for an id that is not a short id)."""
    # Never sent to PostgreSQL: an id with a NUL byte would make the query fail with a 500.
    if not _SHORT_ID.fullmatch(str(memory_id)):
        raise NotFound()
    memory = (
        memories_for_user(user).select_related("deleted_source_message__conversation")
        .prefetch_related(_versions_prefetch()).filter(pk=str(memory_id)).first()
    )
    if memory is None:
        raise NotFound()
    return memory


def active_memory_for_user(*, user: AbstractBaseUser, memory_id: object) -> AgentMemory:
    """One active memory of `user`; a deleted, foreign or unknown id is NotFound."""
    memory = memory_for_user(user=user, memory_id=memory_id)
    if not memory.is_active:
        raise NotFound()
    return memory


def active_memory_with_subject(*, user: AbstractBaseUser, subject: str) -> AgentMemory | None:
    """The user's active memory whose subject is `subject` as a reader sees it: compared in
    memory_site.core.text.comparison_key's form (case, full-width letters, zero-width
    characters and spacing do not make another subject). In Python, since PostgreSQL has
    no case folding: a user's active memories are few (the token budget bounds them)."""
    return _active_memory_reading(user=user, field="subject", text=subject)


def active_memory_with_content(*, user: AbstractBaseUser, content: str) -> AgentMemory | None:
    """The user's active memory whose current text reads as `content` (comparison_key's form),
    annotated like memories_for_user; None when there is none."""
    return _active_memory_reading(user=user, field="content", text=content)


def _active_memory_reading(*, user: AbstractBaseUser, field: str, text: str) -> AgentMemory | None:
    """The user's active memory whose `field` ("subject", or the annotated current "content")
    reads as `text` in comparison_key's form."""
    key = comparison_key(text)
    if not key:
        return None
    memories = active_memories_for_user(user)
    held = memories.exclude(**{f"{field}__isnull": True}).values_list("pk", field)
    match = next((pk for pk, other in held if comparison_key(other) == key), None)
    return None if match is None else memories.get(pk=match)


def places_for_user(user: AbstractBaseUser) -> QuerySet[Place]:
    """The user's places, oldest first, with the number of conversations that mention each."""
    if not user.is_authenticated:
        return Place.objects.none()
    return (
        Place.objects.filter(user=user)
        .annotate(
            conversation_count=Count(
                "mentions__conversation", distinct=True, filter=Q(mentions__conversation__isnull=False)
            )
        )
        .order_by("added_at", "place_id")
    )


# places_for_user in plain SQL: oldest first, with the conversations that mention each.
_PLACES_SQL = """
SELECT coalesce(json_agg(json_build_array(
         p.id, p.place_id, p.name, p.notes,
         (SELECT count(DISTINCT pm.conversation_id) FROM {mentions} pm
          WHERE pm.place_id = p.id AND pm.conversation_id IS NOT NULL))
         ORDER BY p.added_at, p.place_id), '[]'::json)
FROM {places} p WHERE p.user_id = %(user_id)s
"""


def places_sql() -> str:
    """places_for_user(user) as SQL of one json value, for %(user_id)s (see
    active_memories_sql); places_from_json makes the places."""
    return _PLACES_SQL.format(**_tables())


def places_from_json(rows: list[list[Any]], *, user_id: int) -> list[Place]:
    """The places of places_sql's value, in its order, with their `conversation_count`."""
    places = []
    for pk, place_id, name, notes, conversation_count in rows:
        place = Place.from_db(
            connection.alias, ("id", "user_id", "place_id", "name", "notes"),
            (UUID(pk), user_id, place_id, name, notes),
        )
        place.conversation_count = conversation_count
        places.append(place)
    return places


def places_with_mentions_for_user(user: AbstractBaseUser) -> QuerySet[Place]:
    """The places page: the user's places, oldest first, with their mentions (newest first)
    and the conversation and message of each."""
    return places_for_user(user).prefetch_related(
        Prefetch(
            "mentions",
            queryset=PlaceMention.objects.filter(conversation__isnull=False)
            .select_related("conversation", "message")
            .order_by("-mentioned_at", "id"),
        )
    )


def place_by_pk_for_user(*, user: AbstractBaseUser, pk: object) -> Place:
    """One of the user's places by its row id, with its mentions as the places page shows
    them; NotFound for anyone else's or an unknown id."""
    try:
        place = places_with_mentions_for_user(user).filter(pk=pk).first()
    except (ValidationError, ValueError):
        raise NotFound() from None
    if place is None:
        raise NotFound()
    return place


def place_for_user(*, user: AbstractBaseUser, place_id: str) -> Place | None:
    return Place.objects.filter(user=user, place_id=place_id).first()


# --- Seed 001's memory document -------------------------------------------------------------


def document_memories(user: AbstractBaseUser) -> QuerySet[AgentMemory]:
    """Active and deactivated (soft-deleted) memories, oldest first, with their first
    version's source; evicted ones have left the document."""
    first = AgentMemoryVersion.objects.filter(memory=OuterRef("pk"), version_number=1)
    return (
        memories_for_user(user)
        .filter(evicted_at__isnull=True)
        .annotate(
            source_conversation_id=Subquery(first.values("source_conversation_id")[:1]),
            source_message_id=Subquery(first.values("source_message_id")[:1]),
        )
        .order_by("created_at", "id")
    )


def document_places(user: AbstractBaseUser) -> QuerySet[Place]:
    return Place.objects.filter(user=user).order_by("added_at", "place_id").prefetch_related(
        Prefetch("mentions", queryset=PlaceMention.objects.order_by("mentioned_at", "id"))
    )


@dataclass
class MemoryDocument:
    """Seed 001's MemoryDocument, derived from the rows at every read: being derived, it
    cannot drift from them, and concurrent writers each add rows instead of replacing one
    document. serializers.MemoryDocumentSerializer is its shape."""

    memories: list[AgentMemory]
    places: list[Place]
    token_count: int
    last_updated: datetime
    schema_version: str = MEMORY_DOCUMENT_SCHEMA_VERSION

    @property
    def total_facts(self) -> int:
        return len(self.memories)

    @property
    def total_active_facts(self) -> int:
        return sum(1 for memory in self.memories if memory.is_active)

    @property
    def total_pois(self) -> int:
        return len(self.places)


def memory_document(user: AbstractBaseUser) -> MemoryDocument:
    """facts: the user's memories, active and deactivated (= soft-deleted), oldest first;
    placer_user_datapoints: places with the conversations mentioning them; metadata:
    last_updated, totals, token_count (tiktoken) and schema_version."""
    memories = list(document_memories(user))
    places = list(document_places(user))
    stamps = [m.updated_at or m.created_at for m in memories]
    stamps += [m.deleted_at for m in memories if m.deleted_at]
    stamps += [p.added_at for p in places]
    stamps += [m.mentioned_at for p in places for m in p.mentions.all() if m.conversation_id]
    return MemoryDocument(
        memories=memories,
        places=places,
        token_count=document_token_count(memories=memories, places=places),
        last_updated=max(stamps, default=None) or timezone.now(),
    )


# --- The caller's own data (GET /api/me/data) ------------------------------------------------


def user_data_export(user: AbstractBaseUser) -> dict[str, QuerySet]:
    """Every agent memory of the user with all its versions (deleted and evicted ones too), and
    every place with its mentions, for the export's ExportAgentMemorySerializer and
    ExportPlaceSerializer. Four queries, whatever the number of rows."""
    return {
        "agent_memories": AgentMemory.objects.filter(user=user)
        .prefetch_related(
            Prefetch("versions", queryset=AgentMemoryVersion.objects.order_by("version_number"))
        )
        .order_by("created_at", "id"),
        "places": Place.objects.filter(user=user)
        .prefetch_related(
            Prefetch("mentions", queryset=PlaceMention.objects.order_by("mentioned_at", "id"))
        )
        .order_by("added_at", "place_id"),
    }