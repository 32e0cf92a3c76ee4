"""The agent turn (SPEC pipeline 5): save the user message, build the context, call the LLM
with the memory tools, run tool calls as the user, save the reply. A memory write the model
asks for runs only when the user's message of the turn allows it (agent_memory.write_rule);
otherwise its tool result says it was held back, and the turn records that. The context ends at
the turn's own user message, so the model answers the message the write rule weighs, also when
later messages exist; the reply is appended after them, naming its message in `reply_to`.

Every step that writes is committed on its own, in order, so a crash or a provider failure
leaves a consistent log: the user message first (seed 004's autosave), then each tool call
together with its `tool` message in one transaction (both or neither), then the assistant
reply, whose commit enqueues summarisation (conversations.services.messages.message_append).
A retry with the same Idempotency-Key finds the saved user message, replays the tool calls
already made instead of running them again, and answers the saved reply if there is one:
nothing is written twice. A session-level advisory lock on the user message lets one request
at a time run its turn; a retry that arrives while the first request is still running gets
TurnInProgress.
"""

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction

from agent_memory.memory_command import CommandReply, command_run, is_memory_command
from agent_memory.services import memory_write_scope
from agent_memory.tools import NOT_CONFIRMED, tool_definitions, tool_execute
from agent_memory.write_rule import TurnWords
from conversations.context import ContextPacket, build_context
from conversations.models import Conversation, Message
from conversations.selectors import idempotency_key_used
from conversations.services.messages import (
    IdempotencyConflict,
    message_append,
    validate_idempotency_key,
    validate_message_content,
)
from memory_site.core.ai import LLMError, get_llm
from memory_site.core.errors import Conflict, ProviderError
from memory_site.core.locks import LockNamespace

logger = logging.getLogger(__name__)

EMPTY_REPLY = "(The model returned an empty reply.)"


class TurnConflict(Conflict):
    """The Idempotency-Key was already used for a different message."""


class TurnInProgress(Conflict):
    """Another request is still running the turn of this user message (a concurrent retry)."""

    code = "turn_in_progress"
    default_message = "A turn for this message is still running."


class TurnProviderError(ProviderError):
    """The LLM failed; the user message is saved and the turn can be retried."""

    def __init__(self, provider_detail: str, *, user_message: Message):
        # The provider's words stay out of the message (memory_site.core.errors.ProviderError):
        # the log line of turn_run carries them under error_id.
        super().__init__(
            f"The language model failed. Your message was saved as #{user_message.sequence}; "
            "send the same request with the same Idempotency-Key to retry without saving it "
            "twice.",
            detail=provider_detail,
        )
        self.user_message = user_message


@dataclass
class TurnResult:
    user_message: Message
    assistant_message: Message
    tool_calls: list[dict[str, Any]]
    packet: ContextPacket | None  # None when a retry answered the saved reply
    replayed: bool = False
    llm_calls: int = 0
    tool_messages: list[Message] = field(default_factory=list)


@dataclass(frozen=True)
class ChatAnswer:
    """What a chat message got, an agent turn or a /memory command, in one shape for every
    caller (TurnResponseSerializer declares it)."""

    reply: str
    user_message: Message | None = None
    assistant_message: Message | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    packet: ContextPacket | None = None  # the context of a turn run now
    token_counts: dict[str, int] | None = None
    cuts: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    replayed: bool = False
    command: bool = False
    command_code: str | None = None

    @classmethod
    def of_turn(cls, result: TurnResult) -> "ChatAnswer":
        packet = result.packet
        # A replayed turn answers the context the reply was given, saved with it.
        saved = result.assistant_message.metadata
        return cls(
            reply=result.assistant_message.content,
            user_message=result.user_message,
            assistant_message=result.assistant_message,
            tool_calls=result.tool_calls,
            packet=packet,
            token_counts=packet.token_counts() if packet else saved.get("token_counts"),
            cuts=packet.cuts if packet else saved.get("cuts", []),
            warnings=packet.warnings if packet else saved.get("warnings", []),
            replayed=result.replayed,
        )

    @classmethod
    def of_command(cls, reply: CommandReply) -> "ChatAnswer":
        """A /memory command: nothing was saved or sent to a model."""
        return cls(reply=reply.reply, command=True, command_code=reply.code)


def _saved_reply(user_message: Message) -> Message | None:
    return Message.objects.filter(
        conversation_id=user_message.conversation_id, role=Message.Role.ASSISTANT,
        metadata__reply_to=user_message.sequence,
    ).order_by("sequence").first()


def _saved_tool_messages(user_message: Message) -> list[Message]:
    return list(
        Message.objects.filter(
            conversation_id=user_message.conversation_id, role=Message.Role.TOOL,
            metadata__reply_to=user_message.sequence,
        ).order_by("sequence")
    )


@contextmanager
def _turn_lock(user_message: Message) -> Iterator[None]:
    """Hold the turn of `user_message` for this request, or raise TurnInProgress.

    A session-level lock, not a transaction: nothing stays open across the LLM call, and a
    process that dies mid-turn loses its connection and with it the lock.
    """
    key = user_message.pk.int & 0x7FFFFFFF
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [LockNamespace.TURN.value, key])
        if not cursor.fetchone()[0]:
            raise TurnInProgress()
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [LockNamespace.TURN.value, key])


def turn_words(user_message: Message) -> TurnWords:
    """What the write rule (agent_memory.write_rule) weighs a memory change against: the user's
    message of this turn and the agent's reply just before it, which it may confirm."""
    previous = Message.objects.filter(
        conversation_id=user_message.conversation_id, role=Message.Role.ASSISTANT,
        sequence__lt=user_message.sequence,
    ).order_by("-sequence").values_list("content", flat=True).first()
    return TurnWords(user_message=user_message.content, previous_reply=previous or "")


def _call_record(message: Message) -> dict[str, Any]:
    return {
        "id": message.metadata["tool_call_id"],
        "name": message.metadata["name"],
        "arguments": message.metadata["arguments"],
        "result": json.loads(message.content),
        "round": message.metadata["round"],
    }


def _held_back(record: dict[str, Any]) -> bool:
    return record["result"].get("code") == NOT_CONFIRMED


def _replay(chat: list[dict[str, Any]], records: list[dict[str, Any]]) -> None:
    """Add the assistant's tool calls and their results to the chat, round by round, in the
    shape OpenAI expects (an assistant message with tool_calls, then one tool message each)."""
    for round_number in sorted({r["round"] for r in records}):
        batch = [r for r in records if r["round"] == round_number]
        chat.append({
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": r["id"], "type": "function",
                 "function": {"name": r["name"], "arguments": r["arguments"]}}
                for r in batch
            ],
        })
        chat.extend(
            {"role": "tool", "tool_call_id": r["id"], "content": json.dumps(r["result"])}
            for r in batch
        )


def turn_run(
    *, conversation: Conversation, content: str, idempotency_key: str | None = None
) -> TurnResult:
    """Run one agent turn as the conversation's user. Raises ValidationError for bad content,
    TurnConflict for a reused key with other content, TurnInProgress while another request runs
    the turn of the same message, TurnProviderError when the LLM fails."""
    validate_message_content(content)
    idempotency_key = validate_idempotency_key(idempotency_key)
    try:
        user_message, created = message_append(
            conversation=conversation, role=Message.Role.USER, content=content,
            idempotency_key=idempotency_key,
        )
        with _turn_lock(user_message):
            return _turn_locked(conversation=conversation, user_message=user_message,
                                idempotency_key=idempotency_key, created=created)
    except IdempotencyConflict as exc:
        # Raised by the user message's append, before anything is written: the reply is stored
        # under a key no other request can use (selectors.idempotency_stored_key).
        raise TurnConflict(str(exc)) from exc


def _turn_locked(
    *, conversation: Conversation, user_message: Message, idempotency_key: str | None,
    created: bool,
) -> TurnResult:
    """The turn of `user_message`, with its lock held."""
    user = conversation.user
    if not created:
        # Read under the lock: a request that held it before us may have finished the turn.
        saved = _saved_reply(user_message)
        if saved is not None:
            return TurnResult(
                user_message=user_message, assistant_message=saved,
                tool_calls=[_call_record(m) for m in _saved_tool_messages(user_message)],
                packet=None, replayed=True,
            )

    # The context ends at this turn's message: later messages (a turn retried after others,
    # or turns running side by side) are other turns' to answer.
    packet = build_context(conversation=conversation, query=user_message.content,
                           through=user_message.sequence)
    chat: list[dict[str, Any]] = packet.chat_messages()
    tools = tool_definitions()
    tool_messages = _saved_tool_messages(user_message)
    records = [_call_record(m) for m in tool_messages]
    _replay(chat, records)
    llm = get_llm()
    words = turn_words(user_message)
    rounds_done = max((r["round"] for r in records), default=0)
    llm_calls = 0
    # One scope for the whole turn: a memory added by an early tool call is never evicted by
    # the token budget of a later call in the same turn.
    with memory_write_scope():
        while True:
            may_call_tools = rounds_done < settings.TURN_MAX_TOOL_ROUNDS
            try:
                reply = llm.chat(messages=chat, tools=tools if may_call_tools else [])
            except LLMError as exc:
                error = TurnProviderError(str(exc), user_message=user_message)
                logger.warning("turn in conversation %s: LLM failed (error %s): %s",
                               conversation.pk, error.error_id, exc)
                raise error from exc
            llm_calls += 1
            if not reply.tool_calls or not may_call_tools:
                break
            rounds_done += 1
            batch = []
            for call in reply.tool_calls:
                # The call and its record commit together: a crash between them would make a
                # retry, which replays the recorded calls, run this one again. The write rule
                # gates it inside tool_execute (`turn=`); a held-back call is recorded too.
                with transaction.atomic():
                    result = tool_execute(
                        user=user, name=call.name, arguments=call.arguments,
                        conversation=conversation, message=user_message, turn=words,
                    )
                    metadata = {"reply_to": user_message.sequence, "tool_call_id": call.id,
                                "name": call.name, "arguments": call.arguments,
                                "round": rounds_done}
                    if result.get("code") == NOT_CONFIRMED:
                        metadata["held_back"] = True
                    saved, _ = message_append(
                        conversation=conversation, role=Message.Role.TOOL,
                        content=json.dumps(result, sort_keys=True, default=str),
                        metadata=metadata,
                    )
                tool_messages.append(saved)
                batch.append(_call_record(saved))
            records.extend(batch)
            _replay(chat, batch)

    # PostgreSQL text cannot hold NUL: a reply that contains one loses only that character.
    reply_text = reply.content.replace("\x00", "")
    # Saved with the reply, so that a retry answering it reports the context it was given.
    context = {"token_counts": packet.token_counts(), "cuts": packet.cuts,
               "warnings": packet.warnings}
    # The calls the write rule held back, recorded with the turn's reply as well.
    held = [r["id"] for r in records if _held_back(r)]
    held_back = {"held_back": held} if held else {}
    try:
        assistant_message, _ = message_append(
            conversation=conversation, role=Message.Role.ASSISTANT,
            content=reply_text if reply_text.strip() else EMPTY_REPLY,
            metadata={
                "reply_to": user_message.sequence,
                "tool_calls": [{"id": r["id"], "name": r["name"]} for r in records],
                **held_back,
                "provider": llm.name,
                **context,
            },
            idempotency_key=idempotency_key, as_reply=True,
        )
    except ValidationError:
        # A reply longer than MESSAGE_MAX_CHARS is stored cut to the limit rather than lost.
        assistant_message, _ = message_append(
            conversation=conversation, role=Message.Role.ASSISTANT,
            content=reply_text[: settings.MESSAGE_MAX_CHARS],
            metadata={"reply_to": user_message.sequence, "truncated": True,
                      "tool_calls": [{"id": r["id"], "name": r["name"]} for r in records],
                      **held_back, "provider": llm.name, **context},
            idempotency_key=idempotency_key, as_reply=True,
        )
    return TurnResult(
        user_message=user_message, assistant_message=assistant_message, tool_calls=records,
        packet=packet, llm_calls=llm_calls, tool_messages=tool_messages,
    )


def chat_message_answer(
    *, conversation: Conversation, content: str, idempotency_key: str | None = None
) -> ChatAnswer:
    """What a chat message gets, for every caller (the turn API and the chat page): a
    `/memory` command is answered straight, without the agent (seed 003), anything else runs
    an agent turn (turn_run, with its errors). A command is not recorded, so a key cannot
    replay it; a key that already names a message is a client bug: TurnConflict, as for any
    other content."""
    if is_memory_command(content):
        idempotency_key = validate_idempotency_key(idempotency_key)
        if idempotency_key and idempotency_key_used(conversation=conversation, key=idempotency_key):
            raise TurnConflict(IdempotencyConflict.default_message)
        return ChatAnswer.of_command(command_run(user=conversation.user, text=content))
    return ChatAnswer.of_turn(
        turn_run(conversation=conversation, content=content, idempotency_key=idempotency_key)
    )
