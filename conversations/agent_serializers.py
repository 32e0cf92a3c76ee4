"""Serializers of the agent-side API: search hits, the context packet, turns and checkpoints."""

from typing import Any

from django.conf import settings
from rest_framework import serializers

from agent_memory.commands import CommandReply
from agent_memory.models import AgentMemory
from conversations.checkpoint import (
    last_response_type,
    recent_turn_summaries,
    session_state,
)
from conversations.context import CUT_ORDER, ContextPacket, memory_entries
from conversations.models import Conversation, Message
from conversations.retrieval import SearchHit
from conversations.serializers import MessageSerializer
from conversations.services.turn import TurnResult
from facts.models import LegacyFact
from facts.selectors import fact_label


class SearchQuerySerializer(serializers.Serializer):
    """Documents `q` and `k` for the schema; validation is retrieval.validate_search_input."""

    q = serializers.CharField(help_text="What to look for in my earlier conversations.")
    k = serializers.IntegerField(
        required=False, help_text="How many hits (1 to SEARCH_MAX_K; default SEARCH_DEFAULT_K)."
    )


class SearchHitSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=["chunk", "message"])
    content = serializers.CharField()
    score = serializers.FloatField()
    conversation_id = serializers.UUIDField()
    message_range_start = serializers.IntegerField()
    message_range_end = serializers.IntegerField(help_text="Exclusive.")
    created_at = serializers.DateTimeField()


class SearchResponseSerializer(serializers.Serializer):
    results = SearchHitSerializer(many=True)
    total = serializers.IntegerField(help_text="Units in scope; len(results) == min(k, total).")
    warnings = serializers.ListField(
        child=serializers.CharField(),
        help_text="What was degraded, e.g. text-only ranking when the embedder failed.",
    )


class ContextQuerySerializer(serializers.Serializer):
    query = serializers.CharField(
        required=False, allow_blank=True,
        help_text="What to retrieve earlier conversations for; default: the latest user message.",
    )

    def validate_query(self, value: str) -> str:
        if len(value) > settings.SEARCH_QUERY_MAX_CHARS:
            raise serializers.ValidationError(
                f"At most {settings.SEARCH_QUERY_MAX_CHARS} characters."
            )
        return value


# --- Response bodies of /context, /turn and /checkpoint, for the schema (the payload
# functions below and conversations.checkpoint build them) ---


def _strings(help_text: str = "") -> serializers.ListField:
    return serializers.ListField(child=serializers.CharField(), help_text=help_text)


class ChatMessageSerializer(serializers.Serializer):
    """One message of an OpenAI chat call."""

    role = serializers.ChoiceField(choices=Message.Role.choices)
    content = serializers.CharField()


class TokenCountsSerializer(serializers.Serializer):
    """tiktoken tokens of each part of the system prompt, of the replayed messages, of the
    whole packet, and the budget it fits."""

    persona = serializers.IntegerField()
    memory = serializers.IntegerField()
    places = serializers.IntegerField()
    datetime = serializers.IntegerField()
    facts = serializers.IntegerField()
    retrieved = serializers.IntegerField()
    rolling_summary = serializers.IntegerField()
    session_state = serializers.IntegerField()
    messages = serializers.IntegerField()
    total = serializers.IntegerField()
    budget = serializers.IntegerField(help_text="CONTEXT_TOKEN_BUDGET")


class ContextCutSerializer(serializers.Serializer):
    """What was left out to fit the budget, in the order it was cut."""

    part = serializers.ChoiceField(choices=CUT_ORDER)
    item = serializers.JSONField(
        allow_null=True,
        help_text="What went: a retrieved unit {id, kind, score}, a message {sequence, role}, "
        "a fact {id}, a memory or place line, the persona {kept_tokens, tokens}, the latest "
        "message {sequence, kept_tokens}, or null for a whole block.",
    )


class ContextSessionStateSerializer(serializers.Serializer):
    """Seed 004's SessionState with the summarisation jobs still running."""

    status = serializers.ChoiceField(choices=Conversation.Status.choices)
    active_topics = _strings()
    open_loops = _strings()
    pending_clarifications = _strings()
    last_intent = serializers.CharField(allow_blank=True)
    turn_count = serializers.IntegerField()
    active_job_refs = _strings("`memory:<id>` of each rolling summary being written.")


class ContextMemorySerializer(serializers.Serializer):
    id = serializers.CharField()
    category = serializers.ChoiceField(choices=AgentMemory.Category.choices)
    subject = serializers.CharField(allow_null=True)
    content = serializers.CharField()


class ContextFactSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    category = serializers.ChoiceField(choices=LegacyFact.Category.choices)
    content = serializers.CharField()
    visibility = serializers.ChoiceField(choices=LegacyFact.Visibility.choices)
    marked = serializers.ChoiceField(
        choices=["personal", "shared"],
        help_text="The fact's mark in the prompt, which follows its visibility: personal = "
        "private to this user, shared = visible to the whole family.",
    )
    author = serializers.CharField(help_text="Username of the member who noted the fact.")
    is_mine = serializers.BooleanField(help_text="true: the conversation's user noted it.")


class ContextSummarySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    start_sequence = serializers.IntegerField()
    end_sequence = serializers.IntegerField()
    text = serializers.CharField()


class ContextMessageSerializer(serializers.Serializer):
    sequence = serializers.IntegerField()
    role = serializers.ChoiceField(choices=Message.Role.choices)
    content = serializers.CharField()


class ContextPartsSerializer(serializers.Serializer):
    """What went into the prompt, part by part, after the budget cuts."""

    memories = ContextMemorySerializer(many=True)
    places = _strings("The places lines of the prompt.")
    facts = ContextFactSerializer(many=True)
    retrieved = SearchHitSerializer(many=True)
    rolling_summary = ContextSummarySerializer(allow_null=True)
    messages = ContextMessageSerializer(many=True, help_text="The replayed messages.")
    session_state = ContextSessionStateSerializer()


class ContextResponseSerializer(serializers.Serializer):
    """The packet of the next LLM call: the OpenAI-ready `messages` (system prompt first),
    its parts and token counts, and seed 004's ConversationContextPacket fields."""

    conversation_id = serializers.UUIDField()
    session_status = serializers.ChoiceField(choices=Conversation.Status.choices)
    context_compiled_at = serializers.DateTimeField()
    query = serializers.CharField(
        allow_blank=True, help_text="What retrieval searched for: the `query` parameter or "
        "the latest user message."
    )
    system_prompt = serializers.CharField()
    messages = ChatMessageSerializer(many=True)
    token_counts = TokenCountsSerializer()
    cuts = ContextCutSerializer(many=True)
    warnings = _strings("What was degraded, e.g. text-only retrieval when the embedder failed.")
    parts = ContextPartsSerializer()
    rolling_session_summary = serializers.CharField(allow_null=True)
    recent_turn_summaries = _strings("One line per recent turn (CHECKPOINT_LAST_TURNS).")
    active_topics = _strings()
    active_job_refs = _strings()
    pending_clarifications = _strings()
    open_loops = _strings()
    resolved_entities_map = serializers.DictField(
        child=serializers.CharField(), help_text="Subject of a memory in the packet → its id."
    )
    last_response_type = serializers.ChoiceField(
        choices=["text", "tool_calls"], allow_null=True,
        help_text="Of the latest assistant reply; null before the first.",
    )


class TurnToolCallSerializer(serializers.Serializer):
    """A memory tool the agent called during the turn, and what it answered."""

    id = serializers.CharField()
    name = serializers.CharField()
    arguments = serializers.CharField(help_text="JSON text, as OpenAI function calling sends it.")
    result = serializers.DictField(help_text="The tool's answer, as POST /api/tools/{name}.")
    round = serializers.IntegerField()


class TurnResponseSerializer(serializers.Serializer):
    reply = serializers.CharField()
    user_message = MessageSerializer(allow_null=True, help_text="null for a /memory command.")
    assistant_message = MessageSerializer(
        allow_null=True, help_text="null for a /memory command."
    )
    tool_calls = TurnToolCallSerializer(many=True)
    token_counts = TokenCountsSerializer(
        allow_null=True, help_text="Of the context the reply was given (saved with the reply)."
    )
    cuts = ContextCutSerializer(many=True)
    warnings = _strings()
    replayed = serializers.BooleanField(
        help_text="true: an earlier request with this Idempotency-Key already ran the turn; "
        "nothing new was written."
    )
    command = serializers.BooleanField(
        help_text="true: the content was a /memory command, answered straight (seed 003): "
        "no message saved, no model call, no summarisation."
    )
    command_code = serializers.ChoiceField(
        choices=["ok", "invalid", "not_found"], allow_null=True,
        help_text="The command's outcome, as POST /api/commands answers it (ok = 200, "
        "invalid = 400, not_found = 404); null for an agent turn.",
    )


class CheckpointMessageSerializer(ContextMessageSerializer):
    created_at = serializers.DateTimeField()


class SummaryDeltaSerializer(serializers.Serializer):
    """The latest completed rolling summary and what it added to the one it was built from."""

    memory_id = serializers.UUIDField()
    base_memory_id = serializers.UUIDField(allow_null=True)
    start_sequence = serializers.IntegerField()
    end_sequence = serializers.IntegerField()
    new_from_sequence = serializers.IntegerField(help_text="The first message it read anew.")
    dropped_before_sequence = serializers.IntegerField()
    memory_text = serializers.CharField()
    base_memory_text = serializers.CharField(allow_null=True)


class CheckpointResponseSerializer(serializers.Serializer):
    """Seed 004's ConversationCheckpointSnapshot, derived from the database."""

    conversation_id = serializers.UUIDField()
    message_count = serializers.IntegerField()
    last_message_at = serializers.DateTimeField(allow_null=True)
    session_state = ContextSessionStateSerializer()
    last_turns = serializers.ListField(
        child=CheckpointMessageSerializer(many=True),
        help_text="The last CHECKPOINT_LAST_TURNS turns, oldest first; each a user message "
        "and the replies that followed it.",
    )
    summary_delta = SummaryDeltaSerializer(allow_null=True)


def _hit(hit: SearchHit) -> dict[str, Any]:
    return dict(SearchHitSerializer(hit).data)


def context_payload(packet: ContextPacket) -> dict[str, Any]:
    """The packet as the API answers it: seed 004's fields, the OpenAI-ready prompt and
    messages, the parts that went into them and the token counts per part."""
    conversation = packet.conversation
    memories = memory_entries(conversation.user, packet.section("memory"))
    facts = packet.section("facts").keys
    summary = packet.section("rolling_summary").keys
    state = session_state(conversation)
    return {
        "conversation_id": str(conversation.pk),
        "session_status": conversation.status,
        "context_compiled_at": packet.compiled_at,
        "query": packet.query,
        "system_prompt": packet.system_prompt,
        "messages": packet.chat_messages(),
        "token_counts": packet.token_counts(),
        "cuts": packet.cuts,
        "warnings": packet.warnings,
        "parts": {
            "memories": memories,
            "places": list(packet.section("places").items),
            "facts": [
                {"id": str(f.pk), "category": f.category, "content": f.content,
                 "visibility": f.visibility, "marked": fact_label(f),
                 "author": f.user.get_username(), "is_mine": f.user_id == conversation.user_id}
                for f in facts
            ],
            "retrieved": [_hit(h) for h in packet.section("retrieved").keys],
            "rolling_summary": (
                {"id": str(summary[0].pk), "start_sequence": summary[0].start_sequence,
                 "end_sequence": summary[0].end_sequence, "text": summary[0].memory_text}
                if summary else None
            ),
            "messages": [
                {"sequence": m.sequence, "role": m.role, "content": m.content}
                for m in packet.messages
            ],
            "session_state": state,
        },
        # Seed 004's ConversationContextPacket fields.
        "rolling_session_summary": summary[0].memory_text if summary else None,
        "recent_turn_summaries": recent_turn_summaries(conversation=conversation),
        "active_topics": state["active_topics"],
        "active_job_refs": state["active_job_refs"],
        "pending_clarifications": state["pending_clarifications"],
        "open_loops": state["open_loops"],
        "resolved_entities_map": {m["subject"]: m["id"] for m in memories if m["subject"]},
        "last_response_type": last_response_type(conversation),
    }


class TurnInputSerializer(serializers.Serializer):
    # Emptiness and length are checked by conversations.services.validate_message_content.
    content = serializers.CharField(trim_whitespace=False, allow_blank=True)


def turn_payload(result: TurnResult) -> dict[str, Any]:
    packet = result.packet
    # A replayed turn answers the context the reply was given, saved with it.
    saved = result.assistant_message.metadata
    return {
        "reply": result.assistant_message.content,
        "user_message": MessageSerializer(result.user_message).data,
        "assistant_message": MessageSerializer(result.assistant_message).data,
        "tool_calls": result.tool_calls,
        "token_counts": packet.token_counts() if packet else saved.get("token_counts"),
        "cuts": packet.cuts if packet else saved.get("cuts", []),
        "warnings": packet.warnings if packet else saved.get("warnings", []),
        "replayed": result.replayed,
        "command": False,
        "command_code": None,
    }


def command_turn_payload(answer: CommandReply) -> dict[str, Any]:
    """A /memory command's reply in the shape of a turn: nothing was saved or sent to a model."""
    return {
        "reply": answer.reply,
        "user_message": None,
        "assistant_message": None,
        "tool_calls": [],
        "token_counts": None,
        "cuts": [],
        "warnings": [],
        "replayed": False,
        "command": True,
        "command_code": answer.code,
    }
