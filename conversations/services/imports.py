"""Bulk import of existing histories: a batch of messages into a conversation (all or nothing,
idempotent by key) and whole conversations of an import file (docs/conversation-memory.md)."""

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from conversations import queue
from conversations.models import Conversation, Message
from conversations.selectors import idempotency_stored_key, messages_under_key
from conversations.services.messages import (
    APPENDABLE_ROLES,
    SESSION_STATE_FIELDS,
    IdempotencyConflict,
    _locked,
    apply_session_state,
    check_roles_allowed,
    conversation_create,
    session_state_of,
    validate_idempotency_key,
    validate_message_content,
)
from conversations.session_state import next_state
from facts.models import Legacy
from memory_site.core.ai import count_tokens
from memory_site.core.errors import ApplicationError
from memory_site.core.sql import quoted_table

# {index of the message in the batch: {field: [messages]}}
BatchErrors = dict[int, dict[str, list[str]]]


@dataclass(frozen=True)
class ImportMessage:
    """One message of an imported history; without `created_at` it is stamped with the time of
    the import."""

    role: str
    content: str
    created_at: datetime | None = None


@dataclass(frozen=True)
class MessageBatch:
    """The messages of one imported batch, in order; `created` is False for a batch saved earlier
    under the same Idempotency-Key (nothing written)."""

    messages: list[Message]
    created: bool

    @property
    def total(self) -> int:
        return len(self.messages)


@dataclass(frozen=True)
class ConversationImport:
    """What importing one conversation of a file did: its messages imported now, and those
    skipped because an earlier run had imported them."""

    conversation: Conversation
    imported: int
    skipped: int


class BatchInvalid(ApplicationError):
    """A message of the batch is invalid: a 400 naming its index, and nothing is written."""

    code = "invalid"
    status = 400

    def __init__(self, errors: BatchErrors):
        self.errors = errors
        index, fields = min(errors.items())
        field, messages = next(iter(fields.items()))
        super().__init__(
            f"messages: {index}: {field}: {messages[0]}",
            errors={"messages": {str(i): fields for i, fields in sorted(errors.items())}},
        )


class BatchTimelineConflict(BatchInvalid):
    """The batch is well formed but its times conflict with the timeline: a `created_at` in the
    future, before the message before it, or before the conversation's last message. A 409 (the
    schema cannot say what the clock and the stored messages allow), in the same shape."""

    code = "timeline_conflict"
    status = 409


class BatchIdempotencyConflict(IdempotencyConflict):
    default_message = "This Idempotency-Key was already used for another batch."


NAIVE_TIME = "Needs a UTC offset."


def import_errors(
    messages: Sequence[ImportMessage], *, now: datetime, not_before: datetime | None = None
) -> BatchErrors:
    """The errors of each invalid message, by index; empty when all are valid.

    `created_at` may not be in the future, nor before the `created_at` of the message before it
    (a message without one counts as `now`, the time of the import), nor before `not_before`
    (the conversation's last message)."""
    errors: BatchErrors = {}
    previous, before = not_before, "the conversation's last message"
    for index, message in enumerate(messages):
        fields: dict[str, list[str]] = {}
        if message.role not in APPENDABLE_ROLES:
            fields["role"] = [f"Must be one of: {', '.join(sorted(APPENDABLE_ROLES))}."]
        try:
            validate_message_content(message.content)
        except ValidationError as exc:
            fields |= exc.message_dict
        at = message.created_at or now
        if timezone.is_naive(at):
            fields["created_at"] = [NAIVE_TIME]
        elif at > now:
            fields["created_at"] = ["Must not be in the future."]
        elif previous is not None and at < previous:
            fields["created_at"] = [f"Must not be before {before}."]
        else:
            previous, before = at, "the message before it"
        if fields:
            errors[index] = fields
    return errors


def messages_import(
    *,
    conversation: Conversation,
    messages: Sequence[ImportMessage],
    idempotency_key: str | None = None,
    allowed_roles: Collection[str] | None = None,
    summarize: bool = True,
) -> MessageBatch:
    """Append up to IMPORT_MAX_BATCH messages in one transaction with the next gap-free
    sequences, all or nothing (BatchInvalid names each bad message's index).

    With an Idempotency-Key, message i is stored under `<key>␟<i>` (selectors); a batch sent
    again with the same key answers the messages saved the first time and writes nothing,
    another batch under a used key, or any batch under the key of a message or a turn, is a
    BatchIdempotencyConflict. PermissionDenied for a role outside
    `allowed_roles`. The summarisation job is enqueued once, after commit (unless `summarize`
    is False: the file import enqueues once per conversation)."""
    if not messages:
        raise ValidationError({"messages": ["At least one message."]})
    if len(messages) > settings.IMPORT_MAX_BATCH:
        raise ValidationError(
            {"messages": [f"At most {settings.IMPORT_MAX_BATCH} messages in a batch."]}
        )
    check_roles_allowed({message.role for message in messages}, allowed_roles)
    idempotency_key = validate_idempotency_key(idempotency_key)
    with transaction.atomic():
        # The row lock serialises writers of this conversation: sequences stay gap-free, and a
        # batch sent twice at once is written by the first and replayed by the second.
        locked = _locked(conversation)
        if idempotency_key and (earlier := _replayed_batch(locked, idempotency_key, messages)):
            return MessageBatch(messages=earlier, created=False)
        now = timezone.now()
        last_at = (
            Message.objects.filter(conversation=locked)
            .order_by("-sequence").values_list("created_at", flat=True).first()
        )
        if errors := import_errors(messages, now=now, not_before=last_at):
            timeline_only = all(
                set(fields) == {"created_at"} and fields["created_at"][0] != NAIVE_TIME
                for fields in errors.values()
            )
            raise (BatchTimelineConflict if timeline_only else BatchInvalid)(errors)
        state = session_state_of(locked)
        rows = []
        for index, message in enumerate(messages):
            state = next_state(state, role=message.role, content=message.content)
            rows.append(Message(
                conversation=locked,
                sequence=locked.message_count + index,
                role=message.role,
                content=message.content,
                token_count=count_tokens(message.content),
                idempotency_key=(
                    idempotency_stored_key(idempotency_key, index) if idempotency_key else None
                ),
            ))
        Message.objects.bulk_create(rows)
        # created_at is auto_now_add, which an insert always overwrites: the original times
        # (and `now` for the others, so that the batch is one instant) are set afterwards.
        for row, message in zip(rows, messages, strict=True):
            row.created_at = message.created_at or now
        _set_created_at(rows)
        locked.message_count += len(rows)
        locked.last_message_at = now
        apply_session_state(locked, state)
        locked.save(update_fields=["message_count", "last_message_at", "updated_at",
                                   *SESSION_STATE_FIELDS])
        if summarize:
            conversation_id = locked.pk
            transaction.on_commit(
                lambda: queue.enqueue_summarization_and_embedding(conversation_id=conversation_id)
            )
    conversation.message_count = locked.message_count
    conversation.last_message_at = locked.last_message_at
    apply_session_state(conversation, state)
    return MessageBatch(messages=rows, created=True)


def _set_created_at(rows: list[Message]) -> None:
    """Store each row's `created_at` in one statement (bulk_update writes a CASE of one branch
    per row, slow to build and to plan for a batch of hundreds)."""
    table = quoted_table(Message)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS m SET created_at = v.created_at "
            "FROM unnest(%s::uuid[], %s::timestamptz[]) AS v(id, created_at) WHERE m.id = v.id",
            [[row.pk for row in rows], [row.created_at for row in rows]],
        )


def _replayed_batch(
    conversation: Conversation, idempotency_key: str, messages: Sequence[ImportMessage]
) -> list[Message] | None:
    """The messages of the batch saved earlier under this key, None when the key is new;
    BatchIdempotencyConflict unless they are exactly this batch, or when a message or a turn
    was saved under the key."""
    keyed = messages_under_key(conversation=conversation, key=idempotency_key, whole_batch=True)
    earlier = keyed.batch
    if not earlier:
        if keyed.used:
            raise BatchIdempotencyConflict()
        return None
    if sorted(earlier) != list(range(len(messages))) or any(
        _differs(earlier[index], message) for index, message in enumerate(messages)
    ):
        raise BatchIdempotencyConflict()
    return [earlier[index] for index in range(len(messages))]


def _differs(saved: Message, message: ImportMessage) -> bool:
    return (saved.role, saved.content) != (message.role, message.content) or (
        message.created_at is not None and saved.created_at != message.created_at
    )


def conversation_import(
    *,
    user: AbstractBaseUser,
    legacy: Legacy,
    key: str,
    messages: Sequence[ImportMessage],
    title: str = "",
    persona: str = "",
    on_batch: Callable[[int], None] | None = None,
) -> ConversationImport:
    """Import one conversation of an import file for `user` (a member of `legacy`, checked by
    the caller) in batches of IMPORT_MAX_BATCH, each its own transaction; the conversation is
    created with its first batch.

    `key` names this conversation's import: batch n is sent with Idempotency-Key `<key>:<n>`,
    and the conversation is found again by its first message's key, so running the same import
    again (also after it stopped half-way) writes nothing twice. `on_batch` is told the size of
    each batch done. The summarisation job is enqueued once, after the last batch."""
    size = settings.IMPORT_MAX_BATCH
    conversation = _imported_conversation(user=user, legacy=legacy, key=key)
    imported = skipped = 0
    for number, start in enumerate(range(0, len(messages), size)):
        batch = messages[start:start + size]
        with transaction.atomic():
            if conversation is None:
                conversation = conversation_create(
                    user=user, legacy=legacy, title=title, persona=persona
                )
            result = messages_import(
                conversation=conversation, messages=batch, idempotency_key=f"{key}:{number}",
                summarize=False,
            )
        if result.created:
            imported += result.total
        else:
            skipped += result.total
        if on_batch is not None:
            on_batch(result.total)
    if imported:
        conversation_id = conversation.pk
        transaction.on_commit(
            lambda: queue.enqueue_summarization_and_embedding(conversation_id=conversation_id)
        )
    return ConversationImport(conversation=conversation, imported=imported, skipped=skipped)


def _imported_conversation(
    *, user: AbstractBaseUser, legacy: Legacy, key: str
) -> Conversation | None:
    first = (
        Message.objects.filter(
            conversation__user=user, conversation__legacy=legacy,
            # The first message's key, and the one it had before keys had a separator.
            idempotency_key__in=[idempotency_stored_key(f"{key}:0", 0), f"{key}:0:0"],
        )
        .select_related("conversation").first()
    )
    return first.conversation if first else None
