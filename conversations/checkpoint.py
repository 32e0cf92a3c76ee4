"""Seed 004's ConversationCheckpointSnapshot and packet fields, derived from the database.

The database is the checkpoint: every message is committed before the API answers and the
session state lives on the conversation row, so a snapshot is a read, never a file, and a
conversation reopened after every process restarted gets the same context.
"""

from typing import Any

from django.conf import settings

from conversations.models import Conversation, ConversationMemory, Message
from conversations.selectors import latest_completed_memory

TURN_PREVIEW_WORDS = 24


def _preview(text: str) -> str:
    words = text.split()
    return " ".join(words[:TURN_PREVIEW_WORDS]) + (" …" if len(words) > TURN_PREVIEW_WORDS else "")


def last_turns(*, conversation: Conversation, turns: int) -> list[list[Message]]:
    """The last `turns` turns, oldest first; a turn starts at a user message and holds the
    replies (assistant, tool) that followed it."""
    if turns < 1:
        return []
    starts = list(
        Message.objects.filter(conversation=conversation, role=Message.Role.USER)
        .order_by("-sequence").values_list("sequence", flat=True)[:turns]
    )
    if not starts:
        return []
    messages = Message.objects.filter(
        conversation=conversation, sequence__gte=min(starts)
    ).order_by("sequence")
    grouped: list[list[Message]] = []
    for message in messages:
        if message.role == Message.Role.USER or not grouped:
            grouped.append([])
        grouped[-1].append(message)
    return grouped


def recent_turn_summaries(*, conversation: Conversation) -> list[str]:
    """Seed 004's `recent_turn_summaries[]`: one compressed line per recent turn."""
    lines = []
    for turn in last_turns(conversation=conversation, turns=settings.CHECKPOINT_LAST_TURNS):
        said = [f"{m.role}: {_preview(m.content)}" for m in turn if m.role != Message.Role.TOOL]
        tools = sum(1 for m in turn if m.role == Message.Role.TOOL)
        lines.append(" → ".join(said) + (f" ({tools} tool call(s))" if tools else ""))
    return lines


def session_state(conversation: Conversation) -> dict[str, Any]:
    return {
        "status": conversation.status,
        "active_topics": list(conversation.active_topics),
        "open_loops": list(conversation.open_loops),
        "pending_clarifications": list(conversation.pending_clarifications),
        "last_intent": conversation.last_intent,
        "turn_count": conversation.turn_count,
        "active_job_refs": active_job_refs(conversation),
    }


def active_job_refs(conversation: Conversation) -> list[str]:
    """Summarisation jobs still running for the conversation (its `processing` summaries)."""
    return [
        f"memory:{pk}"
        for pk in ConversationMemory.objects.filter(
            conversation=conversation, status=ConversationMemory.Status.PROCESSING
        ).values_list("pk", flat=True)
    ]


def last_response_type(conversation: Conversation) -> str | None:
    last = (
        Message.objects.filter(conversation=conversation, role=Message.Role.ASSISTANT)
        .order_by("-sequence").first()
    )
    if last is None:
        return None
    return "tool_calls" if last.metadata.get("tool_calls") else "text"


def summary_delta(conversation: Conversation) -> dict[str, Any] | None:
    """The latest completed rolling summary and what it added to the one it was built from."""
    memory = latest_completed_memory(conversation=conversation)
    if memory is None:
        return None
    base = memory.base_memory
    return {
        "memory_id": str(memory.pk),
        "base_memory_id": str(base.pk) if base else None,
        "start_sequence": memory.start_sequence,
        "end_sequence": memory.end_sequence,
        # As conversations.services.summarization.memory_generate reads it: the window may
        # start past the end of its base, when the sliding window moved further than the base
        # reached.
        "new_from_sequence": (
            max(memory.start_sequence, base.end_sequence + 1) if base else memory.start_sequence
        ),
        "dropped_before_sequence": memory.start_sequence,
        "memory_text": memory.memory_text,
        "base_memory_text": base.memory_text if base else None,
    }


def checkpoint_snapshot(*, conversation: Conversation) -> dict[str, Any]:
    """Seed 004's ConversationCheckpointSnapshot: session state, the last K turns raw and the
    summary delta."""
    turns = last_turns(conversation=conversation, turns=settings.CHECKPOINT_LAST_TURNS)
    return {
        "conversation_id": str(conversation.pk),
        "message_count": conversation.message_count,
        "last_message_at": conversation.last_message_at,
        "session_state": session_state(conversation),
        "last_turns": [
            [
                {"sequence": m.sequence, "role": m.role, "content": m.content,
                 "created_at": m.created_at}
                for m in turn
            ]
            for turn in turns
        ],
        "summary_delta": summary_delta(conversation),
    }
