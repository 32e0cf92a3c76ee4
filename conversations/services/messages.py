"""Writes of conversations, the append-only message log and the session state it updates."""

from collections.abc import Collection

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from conversations import queue
from conversations.models import (
    UNIT_ROLES,
    Conversation,
    ConversationChunk,
    ConversationMemory,
    Message,
)
from conversations.selectors import REPLY_PART, idempotency_stored_key, messages_under_key
from conversations.session_state import SessionState, next_state
from facts.models import Legacy, LegacyMembership
from memory_site.core.ai import count_tokens
from memory_site.core.errors import Conflict, NotFound
from memory_site.core.locks import hold_user
from memory_site.core.text import nul_errors, reject_nul

APPENDABLE_ROLES = frozenset(Message.Role.values)
# What a person signed in to the dashboard may post: their own words. The agent's, the system's
# and the tools' messages come from integration credentials (docs/conversation-memory.md).
PERSON_ROLES = frozenset({Message.Role.USER.value})
ROLE_NOT_ALLOWED = (
    "Signed in to the dashboard, you may post only user messages; the agent's, system and tool "
    "messages come from an integration (an API token or a platform key)."
)


def check_roles_allowed(roles: Collection[str], allowed_roles: Collection[str] | None) -> None:
    """PermissionDenied when a role is outside `allowed_roles` (None: every role)."""
    if allowed_roles is not None and not set(roles) <= set(allowed_roles):
        raise PermissionDenied(ROLE_NOT_ALLOWED)


class IdempotencyConflict(Conflict):
    """The Idempotency-Key was already used in this conversation for a different message."""

    default_message = "This Idempotency-Key was already used for another message."


class ConversationKeyConflict(Conflict):
    """The Idempotency-Key already started another conversation of the user."""

    default_message = ("This Idempotency-Key was already used to start a conversation with "
                       "another legacy, title or persona.")


def conversation_create(
    *, user: AbstractBaseUser, legacy: Legacy, title: str = "", persona: str = ""
) -> Conversation:
    """Start a conversation; the caller has already checked that `user` is a member of `legacy`,
    and it is checked again once the user's account row is held (hold_user: an erase of their
    data under way finishes first, and then they are nobody's member): NotFound then."""
    title, persona = validate_conversation_fields(title=title, persona=persona)
    return _create_as_member(user=user, legacy=legacy, title=title, persona=persona)


def _create_as_member(*, user: AbstractBaseUser, legacy: Legacy, **fields: object) -> Conversation:
    with transaction.atomic():
        hold_user(user.pk)
        if not LegacyMembership.objects.filter(user=user, legacy=legacy).exists():
            raise NotFound()
        return Conversation.objects.create(user=user, legacy=legacy, **fields)


def conversation_start(
    *, user: AbstractBaseUser, legacy: Legacy, title: str = "", persona: str = "",
    idempotency_key: str | None = None,
) -> tuple[Conversation, bool]:
    """conversation_create under an Idempotency-Key: (conversation, created). The key already
    used by the user returns the conversation it started, when the legacy, title and persona
    are the same (a retried request), else ConversationKeyConflict; nothing is written either
    way. Two requests with one key at once make one conversation (a unique constraint)."""
    key = validate_idempotency_key(idempotency_key)
    if key is None:
        return conversation_create(user=user, legacy=legacy, title=title, persona=persona), True
    title, persona = validate_conversation_fields(title=title, persona=persona)

    def earlier() -> Conversation | None:
        found = Conversation.objects.filter(user=user, idempotency_key=key).first()
        if found is not None and (found.legacy_id, found.title, found.persona) != (
                legacy.pk, title, persona):
            raise ConversationKeyConflict()
        return found

    if (found := earlier()) is not None:
        return found, False
    try:
        return _create_as_member(user=user, legacy=legacy, title=title, persona=persona,
                                 idempotency_key=key), True
    except IntegrityError:
        found = earlier()
        if found is None:
            raise
        return found, False


def validate_conversation_fields(*, title: str, persona: str) -> tuple[str, str]:
    """The title and persona, stripped; ValidationError on the field that is too long or
    carries a NUL (also used to check an import file before anything is written)."""
    title = (title or "").strip()
    persona = (persona or "").strip()
    errors = {}
    if len(title) > settings.CONVERSATION_TITLE_MAX_CHARS:
        errors["title"] = [f"At most {settings.CONVERSATION_TITLE_MAX_CHARS} characters."]
    if len(persona) > settings.PERSONA_MAX_CHARS:
        errors["persona"] = [f"At most {settings.PERSONA_MAX_CHARS} characters."]
    elif count_tokens(persona) > settings.PERSONA_MAX_TOKENS:
        errors["persona"] = [f"At most {settings.PERSONA_MAX_TOKENS} tokens."]
    errors = nul_errors(title=title, persona=persona) | errors
    if errors:
        raise ValidationError(errors)
    return title, persona


def validate_message_content(content: str) -> str:
    if not isinstance(content, str) or not content.strip():
        raise ValidationError({"content": ["A message needs some content."]})
    if len(content) > settings.MESSAGE_MAX_CHARS:
        raise ValidationError(
            {"content": [f"At most {settings.MESSAGE_MAX_CHARS} characters."]}
        )
    reject_nul(content=content)
    return content


# Stored with a separator and a part (selectors.idempotency_stored_key; Message.idempotency_key
# holds 200).
IDEMPOTENCY_KEY_MAX_CHARS = 128


def validate_idempotency_key(key: str | None) -> str | None:
    """The key, or None when absent; anything but 1–128 printable ASCII characters is an error
    on `Idempotency-Key` (the header that carries it). Printable ASCII only is what keeps a key
    a client sends apart from the keys stored for other requests (selectors)."""
    if not key:
        return None
    if len(key) > IDEMPOTENCY_KEY_MAX_CHARS or not all(" " <= char <= "~" for char in key):
        raise ValidationError({"Idempotency-Key": [
            f"At most {IDEMPOTENCY_KEY_MAX_CHARS} printable ASCII characters."
        ]})
    return key


def _locked(conversation: Conversation) -> Conversation:
    """The conversation's row, locked; NotFound when it was deleted meanwhile
    (services.deletion.conversation_delete)."""
    locked = Conversation.objects.select_for_update().filter(pk=conversation.pk).first()
    if locked is None:
        raise NotFound()
    return locked


def message_append(
    *,
    conversation: Conversation,
    role: str,
    content: str,
    metadata: dict | None = None,
    idempotency_key: str | None = None,
    as_reply: bool = False,
    allowed_roles: Collection[str] | None = None,
) -> tuple[Message, bool]:
    """Append a message with the next gap-free sequence number.

    Returns (message, created). With an idempotency key already used in this
    conversation, the earlier message is returned and nothing is written; IdempotencyConflict
    when that message has another role or content, or the key is a batch's. `as_reply`: the
    message is the reply of the turn with this key, not the message it names. PermissionDenied,
    and nothing written, for a role outside `allowed_roles` (None: every role).
    """
    if role not in APPENDABLE_ROLES:
        raise ValidationError({"role": [f"Must be one of: {', '.join(sorted(APPENDABLE_ROLES))}."]})
    check_roles_allowed([role], allowed_roles)
    validate_message_content(content)
    idempotency_key = validate_idempotency_key(idempotency_key)
    with transaction.atomic():
        # The row lock serialises appends to one conversation (the counter is rolled back with
        # the message, so sequences never have gaps) and the check of the key with them: a
        # request with the same key, or a batch under it, cannot commit in between.
        locked = _locked(conversation)
        if idempotency_key and (
            replayed := _replayed(locked, idempotency_key, as_reply=as_reply, role=role,
                                  content=content)
        ):
            return replayed, False
        now = timezone.now()
        message = Message.objects.create(
            conversation=locked,
            sequence=locked.message_count,
            role=role,
            content=content,
            token_count=count_tokens(content),
            metadata=metadata or {},
            idempotency_key=(
                idempotency_stored_key(idempotency_key, REPLY_PART if as_reply else "")
                if idempotency_key else None
            ),
        )
        locked.message_count += 1
        locked.last_message_at = now
        state = next_state(session_state_of(locked), role=role, content=content)
        apply_session_state(locked, state)
        locked.save(update_fields=["message_count", "last_message_at", "updated_at",
                                   *SESSION_STATE_FIELDS])
        if role == Message.Role.ASSISTANT:
            # After commit, so the job sees the message; a crash in between is covered by
            # the sweep, which finds every conversation whose summarisation is due.
            conversation_id = locked.pk
            transaction.on_commit(lambda: queue.enqueue_summarization(conversation_id=conversation_id))
        if role in UNIT_ROLES:
            # A retrieval unit: embedded by a job, never on the request path; a crash
            # before the job is queued is covered by the embedding sweep.
            embed_id = locked.pk
            transaction.on_commit(lambda: queue.enqueue_embedding(conversation_id=embed_id))
    conversation.message_count = locked.message_count
    conversation.last_message_at = locked.last_message_at
    apply_session_state(conversation, session_state_of(locked))
    return message, True


def _replayed(
    conversation: Conversation, idempotency_key: str, *, as_reply: bool, role: str, content: str
) -> Message | None:
    """The message (or turn reply) saved earlier under this key, if any; IdempotencyConflict
    when it is not the same message, or when the key is a batch's."""
    keyed = messages_under_key(conversation=conversation, key=idempotency_key)
    if keyed.batch:
        raise IdempotencyConflict()
    existing = keyed.reply if as_reply else keyed.message
    if existing is not None and (existing.role != role or existing.content != content):
        raise IdempotencyConflict()
    return existing


SESSION_STATE_FIELDS = ("status", "active_topics", "open_loops", "pending_clarifications",
                        "last_intent", "turn_count")


def session_state_of(conversation: Conversation) -> SessionState:
    return SessionState(**{name: getattr(conversation, name) for name in SESSION_STATE_FIELDS})


def apply_session_state(conversation: Conversation, state: SessionState) -> None:
    for name in SESSION_STATE_FIELDS:
        setattr(conversation, name, getattr(state, name))


def conversation_close(*, conversation: Conversation) -> Conversation:
    """Seed 004's clean shutdown: mark the session `shutdown_clean`, then (after commit) archive
    the unsummarised tail and write the final rolling summary in a job.

    Closing a closed conversation enqueues the finishing job again and changes nothing else,
    so a retry after a failed finish is safe.
    """
    with transaction.atomic():
        locked = _locked(conversation)
        if locked.status != Conversation.Status.SHUTDOWN_CLEAN:
            locked.status = Conversation.Status.SHUTDOWN_CLEAN
            locked.closed_at = timezone.now()
            locked.save(update_fields=["status", "closed_at", "updated_at"])
        conversation_id = locked.pk
        transaction.on_commit(lambda: queue.enqueue_summarization(conversation_id=conversation_id))
    conversation.status = locked.status
    conversation.closed_at = locked.closed_at
    return conversation


# --- Erasing the caller's own data (DELETE /api/me/data) --------------------------------------


def user_data_erase(*, user: AbstractBaseUser) -> dict[str, int]:
    """Delete every conversation of the user with its messages, rolling summaries and archived
    chunks (also those in legacies the user has left). Facts, memory versions and place
    mentions that came from them keep their other data and lose the link (SET NULL).
    Returns the counts per kind."""
    with transaction.atomic():
        # Each conversation's row first, in one order: a message being appended (it locks the
        # row: message_append) is committed before the delete collects the messages, and one
        # that comes after finds the conversation gone (404). Unlocked, the delete collected
        # the messages, an append committed one more, and the delete failed on its key.
        list(Conversation.objects.select_for_update().filter(user=user).order_by("pk")
             .values_list("pk", flat=True))
        _, deleted = Conversation.objects.filter(user=user).delete()
        # A chunk names its user as well as its conversation; none may outlive the erase.
        _, stray = ConversationChunk.objects.filter(user=user).delete()
    return {
        "conversations": deleted.get(Conversation._meta.label, 0),
        "messages": deleted.get(Message._meta.label, 0),
        "summaries": deleted.get(ConversationMemory._meta.label, 0),
        "chunks": deleted.get(ConversationChunk._meta.label, 0)
        + stray.get(ConversationChunk._meta.label, 0),
    }
