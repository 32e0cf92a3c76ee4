"""Seed 004's ConversationCheckpointSnapshot and packet fields, derived from the database.

The database is the checkpoint: every message is committed before the API answers and the
session state lives on the conversation row, so a snapshot is a read, never a file, and a
conversation reopened after every process restarted gets the same context.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.conf import settings
from django.db.models import GeneratedField, QuerySet
from pgvector.django import VectorField

from conversations.models import Conversation, ConversationMemory, Message
from conversations.selectors import latest_completed_rolling_summary

TURN_PREVIEW_WORDS = 24


def _preview(text: str) -> str:
    words = text.split()
    return " ".join(words[:TURN_PREVIEW_WORDS]) + (" …" if len(words) > TURN_PREVIEW_WORDS else "")


def without_retrieval_columns(messages: QuerySet[Message]) -> QuerySet[Message]:
    """Messages without the columns only retrieval reads (the vector and what PostgreSQL
    derives from it or from the text): kilobytes a row that the turns never show."""
    return messages.defer(*(
        f.name for f in Message._meta.concrete_fields
        if isinstance(f, VectorField | GeneratedField)
    ))


def last_turns_start(*, conversation: Conversation, turns: int) -> int | None:
    """The first message of the last `turns` turns (the user message that starts the oldest
    of them); None without any."""
    if turns < 1:
        return None
    return min(
        Message.objects.filter(conversation=conversation, role=Message.Role.USER)
        .order_by("-sequence").values_list("sequence", flat=True)[:turns],
        default=None,
    )


def group_turns(messages: Iterable[Message]) -> list[list[Message]]:
    """Messages in sequence order from a user message on, as turns: a turn starts at a user
    message and holds the replies (assistant, tool) that followed it."""
    grouped: list[list[Message]] = []
    for message in messages:
        if message.role == Message.Role.USER or not grouped:
            grouped.append([])
        grouped[-1].append(message)
    return grouped


def last_turns(*, conversation: Conversation, turns: int) -> list[list[Message]]:
    """The last `turns` turns, oldest first; a turn starts at a user message and holds the
    replies (assistant, tool) that followed it."""
    start = last_turns_start(conversation=conversation, turns=turns)
    if start is None:
        return []
    return group_turns(
        without_retrieval_columns(Message.objects.filter(conversation=conversation))
        .filter(sequence__gte=start).order_by("sequence")
    )


def recent_turn_summaries(*, turns: list[list[Message]]) -> list[str]:
    """Seed 004's `recent_turn_summaries[]`: one compressed line per recent turn (`turns` as
    last_turns reads them)."""
    lines = []
    for turn in turns:
        said = [f"{m.role}: {_preview(m.content)}" for m in turn if m.role != Message.Role.TOOL]
        tools = sum(1 for m in turn if m.role == Message.Role.TOOL)
        lines.append(" → ".join(said) + (f" ({tools} tool call(s))" if tools else ""))
    return lines


def session_state(
    conversation: Conversation, *, job_refs: list[str] | None = None
) -> dict[str, Any]:
    """Seed 004's SessionState; `job_refs`: active_job_refs(conversation), when already read."""
    return {
        "status": conversation.status,
        "active_topics": list(conversation.active_topics),
        "open_loops": list(conversation.open_loops),
        "pending_clarifications": list(conversation.pending_clarifications),
        "last_intent": conversation.last_intent,
        "turn_count": conversation.turn_count,
        "active_job_refs": active_job_refs(conversation) if job_refs is None else job_refs,
    }


def active_job_refs(conversation: Conversation) -> list[str]:
    """Summarisation jobs still running for the conversation (its `processing` summaries)."""
    return [
        f"memory:{pk}"
        for pk in ConversationMemory.objects.filter(
            conversation=conversation, status=ConversationMemory.Status.PROCESSING
        ).values_list("pk", flat=True)
    ]


def last_response_type(
    conversation: Conversation, *, turns: list[list[Message]] | None = None
) -> str | None:
    """Of the latest assistant reply; None before the first. `turns`: the conversation's last
    turns as last_turns reads them (they end at its latest message), when already read: a reply
    among them is the latest, and only without one is the conversation read."""
    last = next((m for turn in reversed(turns or []) for m in reversed(turn)
                 if m.role == Message.Role.ASSISTANT), None)
    if last is None:
        last = (
            Message.objects.filter(conversation=conversation, role=Message.Role.ASSISTANT)
            .order_by("-sequence").only("metadata").first()
        )
    if last is None:
        return None
    return "tool_calls" if last.metadata.get("tool_calls") else "text"


def new_from_sequence(summary: ConversationMemory) -> int:
    """The first message a rolling summary read anew, as
    conversations.services.summarization.rolling_summary_generate reads it: the window may start past
    the end of its base, when the sliding window moved further than the base reached."""
    base = summary.base_memory
    return max(summary.start_sequence, base.end_sequence + 1) if base else summary.start_sequence


@dataclass
class Checkpoint:
    """Seed 004's ConversationCheckpointSnapshot (CheckpointResponseSerializer is its shape):
    session state, the last K turns raw and the latest completed summary with its base."""

    conversation: Conversation
    last_turns: list[list[Message]]
    summary: ConversationMemory | None

    @cached_property
    def session_state(self) -> dict[str, Any]:
        return session_state(self.conversation)


def checkpoint_snapshot(*, conversation: Conversation) -> Checkpoint:
    return Checkpoint(
        conversation=conversation,
        last_turns=last_turns(conversation=conversation, turns=settings.CONTEXT_RAW_TURNS),
        summary=latest_completed_rolling_summary(conversation=conversation),
    )
