"""Serializers of the agent-side API: search hits, the context packet, turns and checkpoints.

Each response shape is declared once, as an output serializer built from the domain object:
the context packet (conversations.context.ContextPacket), a chat answer
(conversations.services.ChatAnswer)."""

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agent_memory.models import AgentMemory
from conversations.checkpoint import new_from_sequence
from conversations.context import CUT_ORDER, ContextPacket
from conversations.models import Conversation, ConversationMemory, Message
from conversations.serializers import ExportSessionStateSerializer, MessageSerializer
from facts.models import LegacyFact
from facts.selectors import fact_label
from memory_site.core.strict import BoundedIntegerField, StrictInputSerializer, TextField


class SearchQuerySerializer(StrictInputSerializer):
    """Documents `q` and `k` for the schema; validation is retrieval.validate_search_input."""

    q = TextField(max_setting="SEARCH_QUERY_MAX_CHARS",
                  help_text="What to look for in my earlier conversations.")
    k = BoundedIntegerField(
        minimum=1, max_setting="SEARCH_MAX_K", required=False,
        help_text="How many hits (1 to SEARCH_MAX_K; default SEARCH_DEFAULT_K).",
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
    """A retrieval.SearchResult."""

    results = SearchHitSerializer(many=True, source="hits")
    total = serializers.IntegerField(help_text="Units in scope; len(results) == min(k, total).")
    warnings = serializers.ListField(
        child=serializers.CharField(),
        help_text="What was degraded, e.g. text-only ranking when the embedder failed.",
    )


class ContextQuerySerializer(StrictInputSerializer):
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


# --- Response bodies of /context, /turn and /checkpoint (conversations.checkpoint builds the
# last) ---


def _strings(help_text: str = "", **kwargs) -> serializers.ListField:
    return serializers.ListField(child=serializers.CharField(), help_text=help_text, **kwargs)


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
        help_text="What went: a retrieved unit {id, kind, score}, a message or a raw-turn "
        "message {sequence, role}, "
        "a fact {id}, a memory or place line, the persona {kept_tokens, tokens}, the latest "
        "message {sequence, kept_tokens}, or null for a whole block.",
    )


class ContextSessionStateSerializer(ExportSessionStateSerializer):
    """Seed 004's SessionState with the summarisation jobs still running."""

    active_job_refs = _strings("`memory:<id>` of each rolling summary being written.")


class ContextMemorySerializer(serializers.Serializer):
    id = serializers.CharField()
    category = serializers.ChoiceField(choices=AgentMemory.Category.choices)
    subject = serializers.CharField(allow_null=True)
    content = serializers.CharField()


class ContextFactSerializer(serializers.Serializer):
    """A fact in the prompt; the context's `user_id` is the conversation's user."""

    id = serializers.UUIDField()
    category = serializers.ChoiceField(choices=LegacyFact.Category.choices)
    content = serializers.CharField()
    visibility = serializers.ChoiceField(choices=LegacyFact.Visibility.choices)
    marked = serializers.SerializerMethodField(
        help_text="The fact's mark in the prompt, which follows its visibility: personal = "
        "private to this user, shared = visible to the whole family.",
    )
    author = serializers.CharField(
        source="user.username", help_text="Username of the member who noted the fact."
    )
    is_mine = serializers.SerializerMethodField(
        help_text="true: the conversation's user noted it."
    )
    disputed = serializers.BooleanField(
        help_text="true: another member's fact in this list states another value of the same "
        "thing (a recorded conflict); the prompt marks the line (disputed)."
    )

    @extend_schema_field(serializers.ChoiceField(choices=["personal", "shared"]))
    def get_marked(self, fact: LegacyFact) -> str:
        return fact_label(fact)

    def get_is_mine(self, fact: LegacyFact) -> bool:
        return fact.user_id == self.context["user_id"]


class ContextSummarySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    start_sequence = serializers.IntegerField()
    end_sequence = serializers.IntegerField()
    text = serializers.CharField(source="memory_text")


class ContextMessageSerializer(serializers.Serializer):
    sequence = serializers.IntegerField()
    role = serializers.ChoiceField(choices=Message.Role.choices)
    content = serializers.CharField()


class ContextPartsSerializer(serializers.Serializer):
    """What went into the prompt, part by part, after the budget cuts."""

    memories = ContextMemorySerializer(many=True)
    places = serializers.ListField(
        child=serializers.CharField(), source="place_lines",
        help_text="The places lines of the prompt.",
    )
    facts = ContextFactSerializer(many=True)
    retrieved = SearchHitSerializer(many=True)
    rolling_summary = ContextSummarySerializer(allow_null=True)
    messages = ContextMessageSerializer(many=True, help_text="The replayed messages.")
    raw_from_sequence = serializers.IntegerField(
        allow_null=True, help_text="The first message of the last CONTEXT_RAW_TURNS turns, "
        "replayed verbatim whatever the rolling summary covers and cut last; null in an empty "
        "conversation."
    )
    session_state = ContextSessionStateSerializer()


class ContextResponseSerializer(serializers.Serializer):
    """The packet of the next LLM call (a ContextPacket): the OpenAI-ready `messages` (system
    prompt first), its parts and token counts, and seed 004's ConversationContextPacket
    fields."""

    conversation_id = serializers.UUIDField(source="conversation.pk")
    session_status = serializers.ChoiceField(
        choices=Conversation.Status.choices, source="conversation.status"
    )
    context_compiled_at = serializers.DateTimeField(source="compiled_at")
    query = serializers.CharField(
        allow_blank=True, help_text="What retrieval searched for: the `query` parameter or "
        "the latest user message."
    )
    system_prompt = serializers.CharField()
    messages = ChatMessageSerializer(many=True, source="chat_messages")
    token_counts = TokenCountsSerializer()
    cuts = ContextCutSerializer(many=True)
    warnings = _strings("What was degraded, e.g. text-only retrieval when the embedder failed.")
    parts = ContextPartsSerializer(source="*")
    rolling_session_summary = serializers.CharField(
        source="rolling_summary.memory_text", allow_null=True
    )
    recent_turn_summaries = _strings("One line per recent turn (CONTEXT_RAW_TURNS).")
    active_topics = _strings(source="session_state.active_topics")
    active_job_refs = _strings(source="session_state.active_job_refs")
    pending_clarifications = _strings(source="session_state.pending_clarifications")
    open_loops = _strings(source="session_state.open_loops")
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
    """A chat answer (conversations.services.ChatAnswer): an agent turn or a /memory command."""

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

    memory_id = serializers.UUIDField(source="pk")
    base_memory_id = serializers.UUIDField(allow_null=True)
    start_sequence = serializers.IntegerField()
    end_sequence = serializers.IntegerField()
    new_from_sequence = serializers.SerializerMethodField(
        help_text="The first message it read anew."
    )
    dropped_before_sequence = serializers.IntegerField(source="start_sequence")
    memory_text = serializers.CharField()
    base_memory_text = serializers.CharField(source="base_memory.memory_text", allow_null=True)

    def get_new_from_sequence(self, summary: ConversationMemory) -> int:
        return new_from_sequence(summary)


class CheckpointResponseSerializer(serializers.Serializer):
    """Seed 004's ConversationCheckpointSnapshot (a conversations.checkpoint.Checkpoint),
    derived from the database."""

    conversation_id = serializers.UUIDField(source="conversation.pk")
    message_count = serializers.IntegerField(source="conversation.message_count")
    last_message_at = serializers.DateTimeField(
        source="conversation.last_message_at", allow_null=True
    )
    session_state = ContextSessionStateSerializer()
    last_turns = serializers.ListField(
        child=CheckpointMessageSerializer(many=True),
        help_text="The last CONTEXT_RAW_TURNS turns, oldest first; each a user message "
        "and the replies that followed it.",
    )
    summary_delta = SummaryDeltaSerializer(source="summary", allow_null=True)


class TurnInputSerializer(StrictInputSerializer):
    # Emptiness and length are checked by conversations.services.validate_message_content.
    content = TextField(max_setting="MESSAGE_MAX_CHARS")


# --- The context packet's body, built as plain data ---------------------------------------------
# ContextResponseSerializer declares the shape (the OpenAPI schema reads it); context_response
# builds the same body without instantiating a serializer field per row, which was most of
# the time the packet spent outside its reads and its search. tests/conversations/
# test_context_cost.py checks that both give byte-identical JSON.

_DATETIME = serializers.DateTimeField()


def _datetime(value: object) -> str | None:
    return _DATETIME.to_representation(value) if value is not None else None


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _hit_body(hit) -> dict:
    return {
        "id": str(hit.id), "kind": hit.kind, "content": str(hit.content),
        "score": float(hit.score), "conversation_id": str(hit.conversation_id),
        "message_range_start": int(hit.message_range_start),
        "message_range_end": int(hit.message_range_end),
        "created_at": _datetime(hit.created_at),
    }


def _session_state_body(state: dict) -> dict:
    return {
        "status": state["status"],
        "active_topics": [_text(t) for t in state["active_topics"]],
        "open_loops": [_text(t) for t in state["open_loops"]],
        "pending_clarifications": [_text(t) for t in state["pending_clarifications"]],
        "last_intent": str(state["last_intent"]),
        "turn_count": int(state["turn_count"]),
        "active_job_refs": [_text(t) for t in state["active_job_refs"]],
    }


def _parts_body(packet: ContextPacket) -> dict:
    user_id = packet.conversation.user_id
    summary = packet.rolling_summary
    return {
        "memories": [
            {"id": str(m.pk), "category": m.category, "subject": _text(m.subject),
             "content": _text(m.content)}
            for m in packet.memories
        ],
        "places": [str(line) for line in packet.place_lines],
        "facts": [
            {"id": str(f.pk), "category": f.category, "content": str(f.content),
             "visibility": f.visibility, "marked": fact_label(f),
             "author": str(f.user.username), "is_mine": f.user_id == user_id,
             "disputed": bool(getattr(f, "disputed", False))}
            for f in packet.facts
        ],
        "retrieved": [_hit_body(hit) for hit in packet.retrieved],
        "rolling_summary": None if summary is None else {
            "id": str(summary.pk), "start_sequence": int(summary.start_sequence),
            "end_sequence": int(summary.end_sequence), "text": str(summary.memory_text),
        },
        "messages": [
            {"sequence": int(m.sequence), "role": m.role, "content": str(m.content)}
            for m in packet.messages
        ],
        "raw_from_sequence": packet.raw_from_sequence,
        "session_state": _session_state_body(packet.session_state),
    }


def context_response(packet: ContextPacket) -> dict:
    """The API's (and the chat page's) body of a context packet: ContextResponseSerializer's
    shape, field for field."""
    state = packet.session_state
    counts = packet.token_counts()
    summary = packet.rolling_summary
    return {
        "conversation_id": str(packet.conversation.pk),
        "session_status": packet.conversation.status,
        "context_compiled_at": _datetime(packet.compiled_at),
        "query": str(packet.query),
        "system_prompt": packet.system_prompt,
        "messages": [{"role": m["role"], "content": str(m["content"])}
                     for m in packet.chat_messages()],
        "token_counts": {name: int(counts[name]) for name in TokenCountsSerializer._declared_fields},
        "cuts": [{"part": cut["part"], "item": cut["item"]} for cut in packet.cuts],
        "warnings": [str(w) for w in packet.warnings],
        "parts": _parts_body(packet),
        "rolling_session_summary": None if summary is None else str(summary.memory_text),
        "recent_turn_summaries": [str(line) for line in packet.recent_turn_summaries],
        "active_topics": [_text(t) for t in state["active_topics"]],
        "active_job_refs": [_text(t) for t in state["active_job_refs"]],
        "pending_clarifications": [_text(t) for t in state["pending_clarifications"]],
        "open_loops": [_text(t) for t in state["open_loops"]],
        "resolved_entities_map": {
            str(key): _text(value) for key, value in packet.resolved_entities_map.items()
        },
        "last_response_type": packet.last_response_type,
    }
