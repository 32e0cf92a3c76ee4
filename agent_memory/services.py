"""Writes of agent memories (create, new version, soft delete), places, and the token budget."""

import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Model, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from agent_memory import selectors
from agent_memory.models import (
    AgentMemory,
    AgentMemoryVersion,
    ChangeOrigin,
    Place,
    PlaceMention,
    generate_short_id,
)
from agent_memory.serializers import MemorySerializer, document_token_count
from memory_site.core.errors import Conflict, NotFound
from memory_site.core.locks import hold_row
from memory_site.core.text import INVISIBLE_MESSAGE, NUL_MESSAGE, has_nul, visible_text

logger = logging.getLogger(__name__)

# "document" is 8 letters, a valid short id, and a path of its own under /api/memory/.
RESERVED_SHORT_IDS = frozenset({"document"})
SHORT_ID_ATTEMPTS = 5
PLACE_FIELD_MAX_CHARS = 200

# Ids of the memories written inside the current `memory_write_scope()`: the token budget
# never evicts what the same request (or agent turn) has just added.
_added_in_scope: ContextVar[set[str] | None] = ContextVar("agent_memory_added", default=None)


class SubjectConflict(Conflict):
    """An active memory of the user already has this subject: update it instead. The API's
    409 body also carries the memory and how to update it."""

    def __init__(self, memory: AgentMemory):
        super().__init__(f"You already have a memory about {memory.subject!r} ({memory.pk}).")
        self.memory = memory

    @property
    def extra(self) -> dict:
        existing = selectors.memory_for_user(user=self.memory.user, memory_id=self.memory.pk)
        return {
            "suggestion": f"Update it instead: PUT /api/memory/{existing.pk} or the "
            f"update_memory tool with memory_id={existing.pk}.",
            "existing_memory": MemorySerializer(existing).data,
        }


@dataclass(frozen=True)
class MemoryUpdate:
    memory: AgentMemory
    old_content: str
    new_content: str
    version: int


@contextmanager
def memory_write_scope() -> Iterator[set[str]]:
    """Protect every memory added inside from eviction until the scope ends.

    Wrap one request or one agent turn (all of its tool calls) in it; each service call
    also protects what it wrote itself, so a lone call needs no scope.
    """
    added: set[str] = set()
    token = _added_in_scope.set(added)
    try:
        yield added
    finally:
        _added_in_scope.reset(token)


def _remember_added(memory_id: str) -> None:
    added = _added_in_scope.get()
    if added is not None:
        added.add(memory_id)


def _lock_user(user: AbstractBaseUser, source: Model | None = None) -> None:
    """Serialise the memory writes of one user: the subject check, version numbers and
    the token budget see every earlier write, and no concurrent add is lost. Then hold the
    write's `source` conversation (hold_row): NotFound when it was deleted since _check_source
    read it (before, the version that named it failed at commit, a 500)."""
    get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk").get()
    if source is not None and not hold_row(type(source), source.pk):
        raise NotFound("The conversation was deleted.")


def _clean_content(content: object, errors: dict[str, list[str]]) -> str:
    low, high = settings.MEMORY_CONTENT_MIN_CHARS, settings.MEMORY_CONTENT_MAX_CHARS
    if not isinstance(content, str):
        errors["content"] = ["This field is required and must be text."]
        return ""
    # Counted as the API's schema counts (whitespace folded), stored as a reader sees it.
    folded = " ".join(content.split())
    text = visible_text(folded)
    if not low <= len(folded) <= high:
        errors["content"] = [f"Must be {low}–{high} characters (got {len(folded)})."]
    elif has_nul(text):
        errors["content"] = [NUL_MESSAGE]
    elif not text:
        errors["content"] = [INVISIBLE_MESSAGE]
    return text


def _clean_subject(subject: object, errors: dict[str, list[str]]) -> str | None:
    if subject is None:
        return None
    if not isinstance(subject, str):
        errors["subject"] = ["Must be text or null."]
        return None
    # Stored as a reader sees it: a subject of only invisible characters is no subject.
    text = visible_text(subject)
    if len(text) > settings.MEMORY_SUBJECT_MAX_CHARS:
        errors["subject"] = [f"At most {settings.MEMORY_SUBJECT_MAX_CHARS} characters."]
    elif has_nul(text):
        errors["subject"] = [NUL_MESSAGE]
    return text or None


def _check_source(
    *, user: AbstractBaseUser, conversation: Model | None, message: Model | None
) -> Model | None:
    """The conversation a write came from; the message must belong to it and both to the user."""
    if message is not None:
        if conversation is None:
            conversation = message.conversation
        elif message.conversation_id != conversation.pk:
            # Not found as a pair: the schema cannot say which messages a conversation holds.
            raise NotFound("The message is not in that conversation.")
    if conversation is not None and conversation.user_id != user.pk:
        raise ValidationError({"conversation_id": ["Not one of your conversations."]})
    return conversation


def _insert_memory(*, user: AbstractBaseUser, category: str, subject: str | None) -> AgentMemory:
    """Insert with a fresh short id, drawing again when one is taken (or reserved)."""
    for _ in range(SHORT_ID_ATTEMPTS):
        short_id = generate_short_id()
        if short_id in RESERVED_SHORT_IDS:
            continue
        try:
            with transaction.atomic():
                return AgentMemory.objects.create(
                    id=short_id, user=user, category=category, subject=subject
                )
        except IntegrityError:
            if not AgentMemory.objects.filter(pk=short_id).exists():
                raise
            logger.info("short id collision on %s, drawing another", short_id)
    raise RuntimeError(f"no free short id after {SHORT_ID_ATTEMPTS} attempts")


def memory_create(
    *,
    user: AbstractBaseUser,
    content: object,
    category: object,
    subject: object = None,
    source_conversation: Model | None = None,
    source_message: Model | None = None,
    origin: str = ChangeOrigin.API,
) -> AgentMemory:
    """Create a memory with its version 1 (seed 003's add_to_memory), recording who made it
    (`origin`) and the conversation and message it came from.

    Raises ValidationError for bad input and SubjectConflict when an active memory of
    the user has a subject that reads the same (selectors.active_memory_with_subject: case,
    full-width and invisible characters aside). Then applies the token budget,
    which never evicts the new memory.
    """
    errors: dict[str, list[str]] = {}
    text = _clean_content(content, errors)
    if category not in AgentMemory.Category.values:
        errors["category"] = [f"Must be one of: {', '.join(AgentMemory.Category.values)}."]
    clean_subject = _clean_subject(subject, errors)
    if errors:
        raise ValidationError(errors)
    conversation = _check_source(
        user=user, conversation=source_conversation, message=source_message
    )
    with transaction.atomic():
        _lock_user(user, conversation)
        if clean_subject:
            existing = selectors.active_memory_with_subject(user=user, subject=clean_subject)
            if existing is not None:
                raise SubjectConflict(existing)
        memory = _insert_memory(user=user, category=str(category), subject=clean_subject)
        AgentMemoryVersion.objects.create(
            memory=memory,
            version_number=1,
            content=text,
            source_conversation=conversation,
            source_message=source_message,
            origin=origin,
        )
        _remember_added(memory.pk)
        memory_enforce_token_limit(user=user, protected_ids={memory.pk})
    logger.info("memory %s created for user %s", memory.pk, user.pk)
    return memory


def memory_update(
    *,
    user: AbstractBaseUser,
    memory: AgentMemory,
    content: object,
    source_conversation: Model | None = None,
    source_message: Model | None = None,
    origin: str = ChangeOrigin.API,
) -> MemoryUpdate:
    """Add version n+1 with the new content (seed 003's update_memory); the id stays. The
    version records who made it (`origin`) and the conversation and message it came from.

    Raises ValidationError for bad content and NotFound when the memory is not an active
    memory of the user (also when it was deleted meanwhile).
    """
    errors: dict[str, list[str]] = {}
    text = _clean_content(content, errors)
    if errors:
        raise ValidationError(errors)
    conversation = _check_source(
        user=user, conversation=source_conversation, message=source_message
    )
    with transaction.atomic():
        _lock_user(user, conversation)
        if not AgentMemory.objects.filter(
            pk=memory.pk, user=user, deleted_at__isnull=True
        ).exists():
            raise NotFound()
        last = AgentMemoryVersion.objects.filter(memory_id=memory.pk).order_by(
            "-version_number"
        ).first()
        old_content = last.content if last else ""
        number = (last.version_number if last else 0) + 1
        AgentMemoryVersion.objects.create(
            memory_id=memory.pk,
            version_number=number,
            content=text,
            source_conversation=conversation,
            source_message=source_message,
            origin=origin,
        )
        _remember_added(memory.pk)
        memory_enforce_token_limit(user=user, protected_ids={memory.pk})
    logger.info("memory %s of user %s is now version %d", memory.pk, user.pk, number)
    return MemoryUpdate(memory=memory, old_content=old_content, new_content=text, version=number)


def memory_delete(
    *,
    user: AbstractBaseUser,
    memory: AgentMemory,
    origin: str = ChangeOrigin.API,
    source_message: Model | None = None,
) -> str:
    """Soft-delete (deleted_at): gone from lists, context and tools, history kept; who did it
    (`origin`) and, for the agent, the user message of its turn are recorded.

    Returns the content it had. NotFound when it is not an active memory of the user.
    """
    conversation = _check_source(user=user, conversation=None, message=source_message)
    with transaction.atomic():
        _lock_user(user, conversation)
        deleted = AgentMemory.objects.filter(
            pk=memory.pk, user=user, deleted_at__isnull=True
        ).update(deleted_at=timezone.now(), deleted_origin=origin,
                 deleted_source_message=source_message)
        if not deleted:
            raise NotFound()
        last = AgentMemoryVersion.objects.filter(memory_id=memory.pk).order_by(
            "-version_number"
        ).first()
    logger.info("memory %s of user %s deleted", memory.pk, user.pk)
    return last.content if last else ""


def memory_restore(
    *,
    user: AbstractBaseUser,
    memory: AgentMemory,
    version_number: int | None = None,
    origin: str = ChangeOrigin.DASHBOARD,
) -> MemoryUpdate:
    """Bring back the text of an earlier version as a NEW version, so history is added to,
    never rewritten. A deleted (or evicted) memory becomes active again, with the text of
    `version_number` (default: its last); an active memory gets the text of `version_number`
    (required, and not the current text).

    NotFound when it is not a memory of the user (or has no such version); ValidationError
    for an active memory without a version or with the current one; SubjectConflict when a
    deleted memory's subject is now held by an active memory. Then applies the token budget,
    which never evicts the restored memory.
    """
    with transaction.atomic():
        _lock_user(user)
        row = AgentMemory.objects.filter(pk=memory.pk, user=user).first()
        if row is None:
            raise NotFound()
        versions = AgentMemoryVersion.objects.filter(memory_id=row.pk).order_by("-version_number")
        last = versions.first()
        chosen = last if version_number is None else versions.filter(
            version_number=version_number
        ).first()
        if last is None or chosen is None:
            raise NotFound()
        if row.is_active and (version_number is None or chosen == last):
            raise ValidationError({"version": ["Choose an earlier version: this is the current text."]})
        if not row.is_active and row.subject:
            existing = selectors.active_memory_with_subject(user=user, subject=row.subject)
            if existing is not None:
                raise SubjectConflict(existing)
        AgentMemoryVersion.objects.create(
            memory_id=row.pk, version_number=last.version_number + 1, content=chosen.content,
            origin=origin, restored_from=chosen.version_number,
        )
        AgentMemory.objects.filter(pk=row.pk).update(
            deleted_at=None, evicted_at=None, deleted_origin="", deleted_source_message=None
        )
        _remember_added(row.pk)
        memory_enforce_token_limit(user=user, protected_ids={row.pk})
    logger.info("memory %s of user %s restored from version %d", row.pk, user.pk,
                chosen.version_number)
    return MemoryUpdate(memory=row, old_content=last.content, new_content=chosen.content,
                        version=last.version_number + 1)


@dataclass(frozen=True)
class MemoryRevert:
    """What undoing a change did: `restored` (a new version with the earlier text, or the
    deleted memory back) or `deleted` (the change undone was the memory's creation)."""

    memory: AgentMemory
    action: str
    content: str
    version: int | None = None


def memory_revert(
    *, user: AbstractBaseUser, memory: AgentMemory, version_number: int | None = None,
    origin: str = ChangeOrigin.DASHBOARD,
) -> MemoryRevert:
    """Undo the latest change of a memory, whoever made it: never by rewriting history.

    * a deleted memory (`version_number` None): restored with its last text (memory_restore);
    * version 1, the memory's creation: the memory is deleted (and can be restored);
    * version n > 1: a new version with the text of version n - 1.

    `version_number` must be the memory's current version (a later change would be lost
    otherwise: restore an earlier version instead): ValidationError. NotFound when it is not
    a memory of the user or has no such version.
    """
    with transaction.atomic():
        # Locked before reading the current version: a concurrent change cannot slip in.
        _lock_user(user)
        return _revert_locked(user=user, memory=memory, version_number=version_number,
                              origin=origin)


def _revert_locked(
    *, user: AbstractBaseUser, memory: AgentMemory, version_number: int | None, origin: str
) -> MemoryRevert:
    row = selectors.memory_for_user(user=user, memory_id=memory.pk)
    if not row.is_active:
        if version_number is not None:
            raise ValidationError({"version": ["A deleted memory is restored as a whole."]})
        update = memory_restore(user=user, memory=row, origin=origin)
        return MemoryRevert(memory=row, action="restored", content=update.new_content,
                            version=update.version)
    if version_number is None:
        raise ValidationError({"version": ["Say which change to undo."]})
    if version_number != row.version:
        if not any(v.version_number == version_number for v in row.versions.all()):
            raise NotFound()
        raise ValidationError({"version": [
            "Only the latest change can be undone; restore an earlier version instead."
        ]})
    if version_number == 1:
        content = memory_delete(user=user, memory=row, origin=origin)
        return MemoryRevert(memory=row, action="deleted", content=content)
    update = memory_restore(user=user, memory=row, version_number=version_number - 1,
                            origin=origin)
    return MemoryRevert(memory=row, action="restored", content=update.new_content,
                        version=update.version)


def memory_enforce_token_limit(
    *, user: AbstractBaseUser, protected_ids: Iterable[str] = ()
) -> list[str]:
    """Seed 001's eviction: while the memory document is over MEMORY_TOKEN_LIMIT tokens,
    evict deactivated (soft-deleted) memories first, then the oldest active ones.

    Never evicts `protected_ids` nor what the current `memory_write_scope()` added.
    Evicted memories get evicted_at (and deleted_at): they leave the document, the
    context and the tools, their history stays for the owner. Logs a WARNING with the
    evicted ids; returns them. Call it with the user's rows locked (the services do).
    """
    limit = settings.MEMORY_TOKEN_LIMIT
    memories = list(selectors.document_memories(user))
    places = list(selectors.document_places(user))
    tokens = document_token_count(memories=memories, places=places)
    if tokens <= limit:
        return []
    protected = set(protected_ids) | (_added_in_scope.get() or set())
    candidates = sorted(
        (m for m in memories if m.pk not in protected),
        key=lambda m: (m.is_active, m.created_at, m.pk),
    )
    remaining = list(memories)
    evicted: list[str] = []
    for memory in candidates:
        if tokens <= limit:
            break
        remaining.remove(memory)
        evicted.append(memory.pk)
        tokens = document_token_count(memories=remaining, places=places)
    if evicted:
        now = timezone.now()
        AgentMemory.objects.filter(user=user, pk__in=evicted).update(
            evicted_at=now, deleted_at=Coalesce(F("deleted_at"), Value(now))
        )
        logger.warning(
            "Evicted %d memories for user %s due to token limit (%d tokens, limit %d): %s",
            len(evicted), user.pk, tokens, limit, ", ".join(evicted),
        )
    if tokens > limit:
        logger.warning(
            "Memory of user %s is still over the token limit (%d > %d): the rest is protected",
            user.pk, tokens, limit,
        )
    return evicted


def _clean_place_text(value: object, field: str, errors: dict[str, list[str]], *,
                      required: bool, max_chars: int) -> str:
    if value is None and not required:
        return ""
    text = visible_text(value) if isinstance(value, str) else ""
    if not isinstance(value, str) or (required and not text):
        errors[field] = ["This field is required and must be text."]
        return ""
    if len(text) > max_chars:
        errors[field] = [f"At most {max_chars} characters."]
    elif has_nul(text):
        errors[field] = [NUL_MESSAGE]
    return text


def place_add(
    *,
    user: AbstractBaseUser,
    place_id: object,
    name: object,
    notes: object = None,
    conversation: Model | None = None,
    message: Model | None = None,
    mentioned_at: datetime | None = None,
) -> tuple[Place, bool]:
    """Seed 001's add_poi: create the place with its first mention, or, when the user
    already has a place with this place_id, add a mention to it (name and notes kept).

    A mention needs a conversation (or a message, whose conversation it takes); without
    either the place is stored without one. Returns (place, created).
    """
    errors: dict[str, list[str]] = {}
    clean_id = _clean_place_text(place_id, "place_id", errors, required=True,
                                 max_chars=PLACE_FIELD_MAX_CHARS)
    clean_name = _clean_place_text(name, "place_name", errors, required=True,
                                   max_chars=PLACE_FIELD_MAX_CHARS)
    clean_notes = _clean_place_text(notes, "notes", errors, required=False,
                                    max_chars=settings.MEMORY_CONTENT_MAX_CHARS)
    if errors:
        raise ValidationError(errors)
    conversation = _check_source(user=user, conversation=conversation, message=message)
    with transaction.atomic():
        _lock_user(user, conversation)
        place = selectors.place_for_user(user=user, place_id=clean_id)
        created = place is None
        if created:
            place = Place.objects.create(
                user=user, place_id=clean_id, name=clean_name, notes=clean_notes
            )
        if conversation is not None:
            PlaceMention.objects.create(
                place=place,
                conversation=conversation,
                message=message,
                mentioned_at=mentioned_at or timezone.now(),
            )
        memory_enforce_token_limit(user=user)
    return place, created


def place_mention_add(
    *,
    user: AbstractBaseUser,
    place: Place,
    conversation: Model | None = None,
    message: Model | None = None,
    mentioned_at: datetime | None = None,
) -> PlaceMention:
    """Seed 001's add_poi_mention: one more conversation (and message) mentioned the place."""
    if place.user_id != user.pk:
        raise NotFound()
    conversation = _check_source(user=user, conversation=conversation, message=message)
    if conversation is None:
        raise ValidationError({"conversation_id": ["A mention needs a conversation."]})
    with transaction.atomic():
        _lock_user(user, conversation)
        mention = PlaceMention.objects.create(
            place=place,
            conversation=conversation,
            message=message,
            mentioned_at=mentioned_at or timezone.now(),
        )
        memory_enforce_token_limit(user=user)
    return mention


def place_mentions_delete_for_conversation(*, conversation: Model) -> int:
    """Delete every mention of a place in a conversation that is being deleted (passed in by
    the app above, as its row); the places stay, with their other mentions and notes.
    Returns how many."""
    with transaction.atomic():
        _, deleted = PlaceMention.objects.filter(conversation=conversation).delete()
    return deleted.get(PlaceMention._meta.label, 0)


def place_update_notes(*, user: AbstractBaseUser, place: Place, notes: object) -> Place:
    """The user's own notes on one of their places (empty clears them); the name, id and
    mentions stay. NotFound for anyone else's place."""
    errors: dict[str, list[str]] = {}
    clean_notes = _clean_place_text(notes, "notes", errors, required=False,
                                    max_chars=settings.MEMORY_CONTENT_MAX_CHARS)
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        _lock_user(user)
        if not Place.objects.filter(pk=place.pk, user=user).update(notes=clean_notes):
            raise NotFound()
        memory_enforce_token_limit(user=user)
    place.notes = clean_notes
    return place


def place_delete(*, user: AbstractBaseUser, place: Place) -> str:
    """Delete one of the user's places with its mentions: it leaves the prompt, the memory
    document and the places page. Returns its name; NotFound for anyone else's place."""
    with transaction.atomic():
        _lock_user(user)
        deleted, _ = Place.objects.filter(pk=place.pk, user=user).delete()
        if not deleted:
            raise NotFound()
    logger.info("place %s of user %s deleted", place.pk, user.pk)
    return place.name


# --- Erasing the caller's own data (DELETE /api/me/data) --------------------------------------


def user_data_erase(*, user: AbstractBaseUser) -> dict[str, int]:
    """Delete every agent memory of the user for good (not the soft delete: versions and
    deleted memories go too) and every place with its mentions. Returns the counts per kind."""
    with transaction.atomic():
        _lock_user(user)
        _, memories = AgentMemory.objects.filter(user=user).delete()
        _, places = Place.objects.filter(user=user).delete()
    return {
        "agent_memories": memories.get(AgentMemory._meta.label, 0),
        "memory_versions": memories.get(AgentMemoryVersion._meta.label, 0),
        "places": places.get(Place._meta.label, 0),
        "place_mentions": places.get(PlaceMention._meta.label, 0),
    }
