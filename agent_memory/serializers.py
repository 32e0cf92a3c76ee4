"""Serializers of the memory, tools and commands API.

Input serializers check shapes; lengths and the rest are the services' rules (settings
read at call time), so the API, the tools and the dashboard answer alike.
"""

import json
from collections.abc import Sequence

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agent_memory.models import AgentMemory, AgentMemoryVersion, Place
from memory_site.core.ai import count_tokens
from memory_site.core.api import ErrorSerializer, IsoDateTimeField
from memory_site.core.strict import NON_SPACE, SPACE, StrictInputSerializer, TextField


class MemorySerializer(serializers.ModelSerializer):
    """Seed 003's MemoryResponse; needs the selectors' content/version/updated_at annotations."""

    content = serializers.CharField(read_only=True)
    version = serializers.IntegerField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True, allow_null=True)

    class Meta:
        model = AgentMemory
        fields = ["id", "category", "subject", "content", "version", "created_at", "updated_at"]


class MemoryVersionSerializer(serializers.ModelSerializer):
    version = serializers.IntegerField(source="version_number", read_only=True)
    source_conversation_id = serializers.UUIDField(read_only=True, allow_null=True)
    source_message_id = serializers.UUIDField(read_only=True, allow_null=True)

    class Meta:
        model = AgentMemoryVersion
        # `origin`: who made the version (agent, api, dashboard, …): a platform sees that its
        # model's by_model calls were recorded as the agent's (found by a live check).
        fields = ["version", "content", "origin", "restored_from", "source_conversation_id",
                  "source_message_id", "created_at"]


class MemoryDetailSerializer(MemorySerializer):
    versions = MemoryVersionSerializer(many=True, read_only=True)
    is_active = serializers.BooleanField(
        read_only=True,
        help_text="false for a deleted (`deleted_at`) or evicted (`evicted_at`) memory: it is "
        "not in GET /api/memory nor in the agent's context, and PUT and DELETE answer 404.",
    )

    class Meta(MemorySerializer.Meta):
        fields = [*MemorySerializer.Meta.fields, "is_active", "deleted_at", "evicted_at", "versions"]


class MemoryUpdatedSerializer(MemorySerializer):
    """The memory after PUT, with the content before and after (seed 003: old → new)."""

    old_content = serializers.CharField(read_only=True)
    new_content = serializers.CharField(read_only=True)

    class Meta(MemorySerializer.Meta):
        fields = [*MemorySerializer.Meta.fields, "old_content", "new_content"]


class SourceInputSerializer(StrictInputSerializer):
    """Where a write comes from: one of the caller's conversations and, optionally, a message."""

    conversation_id = serializers.UUIDField(required=False, allow_null=True)
    message_id = serializers.UUIDField(required=False, allow_null=True)


class MemoryCreateInputSerializer(SourceInputSerializer):
    content = TextField(min_setting="MEMORY_CONTENT_MIN_CHARS",
                        max_setting="MEMORY_CONTENT_MAX_CHARS",
                        too_long="Must be {minimum}–{maximum} characters (got {length}).")
    category = serializers.ChoiceField(choices=AgentMemory.Category.choices)
    subject = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, trim_whitespace=True
    )


class MemoryUpdateInputSerializer(SourceInputSerializer):
    content = TextField(min_setting="MEMORY_CONTENT_MIN_CHARS",
                        max_setting="MEMORY_CONTENT_MAX_CHARS",
                        too_long="Must be {minimum}–{maximum} characters (got {length}).")


class MemoryConflictSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField()
    suggestion = serializers.CharField()
    existing_memory = MemorySerializer()


class ToolCallInputSerializer(SourceInputSerializer):
    arguments = serializers.JSONField(
        required=False,
        help_text="The call's arguments: an object, or the JSON text OpenAI sends.",
    )
    by_model = serializers.BooleanField(
        required=False, default=False,
        help_text="The call is one the platform's own model made in a turn (not the user's "
        "own action): `message_id`, the user's message of that turn, is required, a change the "
        "user's words do not ask for answers `not_confirmed` and writes nothing, and what it "
        "writes is the agent's, which the dashboard offers to undo.",
    )

    def validate(self, attrs: dict) -> dict:
        if attrs.get("by_model") and not attrs.get("message_id"):
            raise serializers.ValidationError(
                {"message_id": ["Required with by_model: the user's message of the turn."]})
        return attrs


class ToolResultSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    tool = serializers.CharField(required=False)
    result = serializers.DictField(required=False)
    code = serializers.CharField(required=False)
    detail = serializers.CharField(required=False)
    errors = serializers.DictField(required=False)
    kind = serializers.CharField(
        required=False, help_text="With not_confirmed: the change held back (add, update, delete).")


class ToolListSerializer(serializers.Serializer):
    tools = serializers.ListField(child=serializers.DictField())
    total = serializers.IntegerField()


# Exactly the texts memory_command.command_run carries out (`/memory`, `/memory list`,
# `/memory delete <id>`, any case, Python's whitespace between words): anything else is a 400.
COMMAND_PATTERN = (
    rf"^{SPACE}*/[mM][eE][mM][oO][rR][yY]"
    rf"({SPACE}+([lL][iI][sS][tT]|[dD][eE][lL][eE][tT][eE]{SPACE}+{NON_SPACE}+))?{SPACE}*$"
)


@extend_schema_field({
    "type": "string", "pattern": COMMAND_PATTERN,
    "description": "`/memory`, `/memory list` or `/memory delete <id>` (any case); anything "
    "else is a 400 with the usage text.",
})
class CommandTextField(serializers.CharField):
    """The command's text. command_run itself answers a text that is no command, the blank one
    too (with the usage text), so blank passes; the schema, which does not allow it, knows
    the field as not blank."""

    def run_validation(self, data: object = serializers.empty) -> object:
        if isinstance(data, str) and not data.strip():
            return ""
        return super().run_validation(data)


class CommandInputSerializer(StrictInputSerializer):
    # A command is a few words and an id: a longer text is no command (found by a hostile
    # relative: ten million characters were echoed back twice).
    text = CommandTextField(trim_whitespace=True, max_length=1000)


class CommandRefusalSerializer(ErrorSerializer):
    """The 400 of /api/commands: the error format, with the usage text as `reply` when the
    text was read but is no command (without `text`, the plain error format)."""

    reply = serializers.CharField(
        required=False, help_text="The usage text, for a chat client to show."
    )


class CommandReplySerializer(serializers.Serializer):
    """A memory_command.CommandReply; a refused command also carries the error format's
    `detail` (the reply) and `code`."""

    reply = serializers.CharField()
    detail = serializers.CharField(source="reply", required=False)
    code = serializers.CharField(required=False)

    def to_representation(self, answer) -> dict:
        data = super().to_representation(answer)
        if answer.status < 400:
            del data["detail"], data["code"]
        return data


# --- Seed 001's memory document (built from selectors.memory_document) ---


class MemoryDocumentFactSerializer(serializers.Serializer):
    """A memory in the document: active or deactivated (soft-deleted); rows come from
    selectors.document_memories, with the first version's source annotated."""

    id = serializers.CharField()
    content = serializers.CharField()
    added_at = IsoDateTimeField(source="created_at")
    source_conversation_id = serializers.UUIDField(allow_null=True)
    source_message_id = serializers.UUIDField(allow_null=True)
    is_active = serializers.BooleanField(help_text="false: deleted (deactivated).")
    category = serializers.ChoiceField(choices=AgentMemory.Category.choices)
    subject = serializers.CharField(allow_null=True)
    version = serializers.IntegerField()
    updated_at = IsoDateTimeField(allow_null=True)
    deactivated_at = IsoDateTimeField(source="deleted_at", allow_null=True)


class MemoryDocumentPlaceSerializer(serializers.Serializer):
    """A place in the document, with the conversations that mention it (mentions prefetched
    in order by selectors.document_places)."""

    place_id = serializers.CharField()
    place_name = serializers.CharField(source="name")
    notes = serializers.SerializerMethodField()
    mentioned_in = serializers.SerializerMethodField(
        help_text="Conversation id → [[message id or null, when], …]."
    )
    added_at = IsoDateTimeField()

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_notes(self, place: Place) -> str | None:
        return place.notes or None

    @extend_schema_field(serializers.DictField(child=serializers.ListField(
        child=serializers.ListField(child=serializers.CharField(allow_null=True),
                                    min_length=2, max_length=2)
    )))
    def get_mentioned_in(self, place: Place) -> dict[str, list[list[str | None]]]:
        mentioned_in: dict[str, list[list[str | None]]] = {}
        for mention in place.mentions.all():
            if mention.conversation_id is None:
                continue
            mentioned_in.setdefault(str(mention.conversation_id), []).append([
                None if mention.message_id is None else str(mention.message_id),
                mention.mentioned_at.isoformat(),
            ])
        return mentioned_in


class MemoryDocumentMetadataSerializer(serializers.Serializer):
    last_updated = IsoDateTimeField()
    total_facts = serializers.IntegerField()
    total_active_facts = serializers.IntegerField()
    total_pois = serializers.IntegerField()
    token_count = serializers.IntegerField(
        help_text="tiktoken tokens of facts and places; over MEMORY_TOKEN_LIMIT, memories are "
        "evicted."
    )
    schema_version = serializers.CharField()


class MemoryDocumentSerializer(serializers.Serializer):
    """Seed 001's MemoryDocument (a selectors.MemoryDocument), derived from the rows."""

    facts = MemoryDocumentFactSerializer(many=True, source="memories")
    placer_user_datapoints = MemoryDocumentPlaceSerializer(many=True, source="places")
    metadata = MemoryDocumentMetadataSerializer(source="*")


def document_token_count(*, memories: Sequence[AgentMemory], places: Sequence[Place]) -> int:
    """Tokens of the document's content (facts and places; the metadata is not counted, as
    it would count itself)."""
    payload = {
        "facts": MemoryDocumentFactSerializer(memories, many=True).data,
        "placer_user_datapoints": MemoryDocumentPlaceSerializer(places, many=True).data,
    }
    return count_tokens(json.dumps(payload, ensure_ascii=False, sort_keys=True))


# --- The caller's export (GET /api/me/data; rows from selectors.user_data_export) ---


class ExportMemoryVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField(source="version_number")
    content = serializers.CharField()
    origin = serializers.CharField()
    restored_from = serializers.IntegerField(allow_null=True)
    source_conversation_id = serializers.UUIDField(allow_null=True)
    source_message_id = serializers.UUIDField(allow_null=True)
    created_at = IsoDateTimeField()


class ExportAgentMemorySerializer(serializers.Serializer):
    id = serializers.CharField()
    category = serializers.ChoiceField(choices=AgentMemory.Category.choices)
    subject = serializers.CharField(allow_null=True)
    created_at = IsoDateTimeField()
    deleted_at = IsoDateTimeField(allow_null=True)
    deleted_origin = serializers.CharField(allow_blank=True)
    evicted_at = IsoDateTimeField(allow_null=True)
    versions = ExportMemoryVersionSerializer(many=True)


class ExportPlaceMentionSerializer(serializers.Serializer):
    conversation_id = serializers.UUIDField(allow_null=True)
    message_id = serializers.UUIDField(allow_null=True)
    mentioned_at = IsoDateTimeField()


class ExportPlaceSerializer(serializers.Serializer):
    place_id = serializers.CharField()
    name = serializers.CharField()
    notes = serializers.CharField(allow_blank=True)
    added_at = IsoDateTimeField()
    mentions = ExportPlaceMentionSerializer(many=True)
