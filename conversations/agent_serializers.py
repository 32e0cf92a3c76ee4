"""Serializers of the agent-side API: search hits, the context packet, turns and checkpoints."""

from typing import Any

from django.conf import settings
from rest_framework import serializers

from conversations.checkpoint import (
    last_response_type,
    recent_turn_summaries,
    session_state,
)
from conversations.context import ContextPacket, memory_entries
from conversations.retrieval import SearchHit
from conversations.serializers import MessageSerializer
from conversations.services.turn import TurnResult


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
                 "visibility": f.visibility,
                 "marked": "personal" if f.user_id == conversation.user_id else "shared"}
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
    }
