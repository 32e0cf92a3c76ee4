"""Serializers of the conversations API."""

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message
from conversations.services import ImportMessage, validate_message_content
from memory_site.core.api import IsoDateTimeField
from memory_site.core.strict import StrictInputSerializer, TextField


class ConversationInputSerializer(StrictInputSerializer):
    legacy_id = serializers.UUIDField()
    # Lengths are checked by conversations.services.conversation_create.
    title = serializers.CharField(required=False, allow_blank=True, default="")
    persona = serializers.CharField(required=False, allow_blank=True, default="")


class ConversationSerializer(serializers.ModelSerializer):
    legacy_id = serializers.UUIDField(read_only=True)
    legacy_name = serializers.CharField(source="legacy.name", read_only=True)

    class Meta:
        model = Conversation
        fields = [
            "id", "legacy_id", "legacy_name", "title", "status", "turn_count", "message_count",
            "created_at", "updated_at", "last_message_at",
        ]


class SessionStateSerializer(serializers.ModelSerializer):
    """Seed 004's SessionState, as stored on the conversation."""

    class Meta:
        model = Conversation
        fields = [
            "status", "active_topics", "open_loops", "pending_clarifications", "last_intent",
            "turn_count",
        ]


class ConversationDetailSerializer(ConversationSerializer):
    session_state = SessionStateSerializer(source="*", read_only=True)

    class Meta(ConversationSerializer.Meta):
        fields = [*ConversationSerializer.Meta.fields, "persona", "closed_at", "session_state"]


class MessageInputSerializer(StrictInputSerializer):
    role = serializers.ChoiceField(choices=Message.Role.choices)
    # Emptiness and length are checked by conversations.services.validate_message_content.
    content = TextField(max_setting="MESSAGE_MAX_CHARS")


class MessageSerializer(serializers.ModelSerializer):
    conversation_id = serializers.UUIDField(read_only=True)

    class Meta:
        model = Message
        fields = ["id", "conversation_id", "sequence", "role", "content", "token_count",
                  "created_at"]


class ImportMessageInputSerializer(StrictInputSerializer):
    """One message of an imported history; validated into a services.ImportMessage."""

    role = serializers.ChoiceField(choices=Message.Role.choices)
    # Emptiness, length and the created_at rules are checked by services.import_errors.
    content = TextField(max_setting="MESSAGE_MAX_CHARS")
    created_at = serializers.DateTimeField(
        required=False,
        help_text="When it was originally said (ISO 8601; without an offset, UTC). Not in the "
        "future, not before the message before it (the time of the import for one without "
        "created_at) nor before the conversation's last message. Default: the time of the import.",
    )

    def validate(self, attrs: dict) -> ImportMessage:
        return ImportMessage(**attrs)


class ImportMessagesField(serializers.ListField):
    """A list of messages; its errors are keyed by the index of the bad message."""

    def __init__(self, **kwargs: object):
        super().__init__(child=ImportMessageInputSerializer(), allow_empty=False, min_length=1,
                         **kwargs)

    def to_internal_value(self, data: object) -> list:
        """The messages; when some are malformed, the errors of every message at once: a bad
        role here and an empty content there are both named, not one per round trip (found
        by an integrator). The content rules are services.import_errors', which reads only
        messages that parsed."""
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if isinstance(exc.detail, dict) and isinstance(data, list):
                for index, item in enumerate(data):
                    content = item.get("content") if isinstance(item, dict) else None
                    if not isinstance(content, str):
                        continue
                    try:
                        validate_message_content(content)
                    except DjangoValidationError as invalid:
                        fields = exc.detail.setdefault(index, {})
                        for field, messages in invalid.message_dict.items():
                            fields.setdefault(field, messages)
            raise


class BatchMessagesField(ImportMessagesField):
    """At most IMPORT_MAX_BATCH messages, counted before any of them is validated."""

    def to_internal_value(self, data: object) -> list:
        if isinstance(data, list) and len(data) > settings.IMPORT_MAX_BATCH:
            raise serializers.ValidationError(
                f"At most {settings.IMPORT_MAX_BATCH} messages in a batch."
            )
        return super().to_internal_value(data)


class MessageBatchInputSerializer(StrictInputSerializer):
    messages = BatchMessagesField(
        help_text="1 to IMPORT_MAX_BATCH messages `{role, content, created_at?}`, in order."
    )


class MessageBatchSerializer(serializers.Serializer):
    """The answer of POST …/messages/batch: the batch's messages with their sequences."""

    messages = MessageSerializer(many=True)
    total = serializers.IntegerField(help_text="The number of messages in this batch.")


class ConversationImportLineSerializer(serializers.Serializer):
    """One line of an import_conversations file (docs/conversation-memory.md)."""

    username = serializers.CharField()
    legacy_id = serializers.UUIDField()
    # Lengths are checked by services.validate_conversation_fields.
    title = serializers.CharField(required=False, allow_blank=True, default="")
    persona = serializers.CharField(required=False, allow_blank=True, default="")
    messages = ImportMessagesField()


class MessageListQuerySerializer(StrictInputSerializer):
    after = serializers.IntegerField(required=False, min_value=-1)


class ConversationListQuerySerializer(StrictInputSerializer):
    legacy_id = serializers.UUIDField(required=False)


class ConversationDeleteQuerySerializer(StrictInputSerializer):
    keep_facts = serializers.ChoiceField(
        choices=["true", "false"], default="false",
        help_text="`true` keeps the facts taken from the conversation (their source is "
        "cleared); `false` (the default) deletes them with it.",
    )

    def validate_keep_facts(self, value: str) -> bool:
        return value == "true"


class ConversationDeletedCountsSerializer(serializers.Serializer):
    """What conversations.services.conversation_delete deleted, per kind."""

    conversations = serializers.IntegerField()
    messages = serializers.IntegerField()
    summaries = serializers.IntegerField(help_text="Rolling summaries (seed 002).")
    chunks = serializers.IntegerField(help_text="Archived chunks with their embeddings.")
    place_mentions = serializers.IntegerField()
    facts = serializers.IntegerField(help_text="Facts taken from it; 0 with keep_facts.")


class ConversationDeletedSerializer(serializers.Serializer):
    """The answer of DELETE /api/ai/conversations/{id}, from conversation_delete's counts."""

    deleted = ConversationDeletedCountsSerializer(source="*")
    facts_kept = serializers.IntegerField(
        help_text="Facts taken from it that stay, with their source cleared (keep_facts=true)."
    )


class ConversationMemorySerializer(serializers.ModelSerializer):
    """One rolling-summary version (seed 002); `base_memory_id` links the chain."""

    base_memory_id = serializers.UUIDField(read_only=True, allow_null=True)

    class Meta:
        model = ConversationMemory
        fields = ["id", "start_sequence", "end_sequence", "status", "base_memory_id",
                  "memory_text", "generation_time_ms", "created_at"]


class ConversationChunkSerializer(serializers.ModelSerializer):
    """An archived summary (seed 000); `message_range_end` is exclusive."""

    conversation_id = serializers.UUIDField(read_only=True)

    class Meta:
        model = ConversationChunk
        fields = ["id", "conversation_id", "content", "message_range_start", "message_range_end",
                  "created_at"]


# --- The caller's export (GET /api/me/data; rows from selectors.user_data_export) ---


def _strings() -> serializers.ListField:
    return serializers.ListField(child=serializers.CharField())


class ExportSessionStateSerializer(serializers.Serializer):
    """Seed 004's SessionState, as stored on the conversation."""

    status = serializers.ChoiceField(choices=Conversation.Status.choices)
    active_topics = _strings()
    open_loops = _strings()
    pending_clarifications = _strings()
    last_intent = serializers.CharField(allow_blank=True)
    turn_count = serializers.IntegerField()


class ExportMessageSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    sequence = serializers.IntegerField()
    role = serializers.ChoiceField(choices=Message.Role.choices)
    content = serializers.CharField()
    token_count = serializers.IntegerField()
    metadata = serializers.DictField()
    # The Idempotency-Key of the request that wrote the message, as the client sent it (stored
    # with a separator and the message's part in the request: selectors.idempotency_stored_key).
    idempotency_key = serializers.CharField(allow_null=True, source="client_idempotency_key")
    created_at = IsoDateTimeField()


class ExportSummarySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    memory_text = serializers.CharField(allow_blank=True)
    start_sequence = serializers.IntegerField()
    end_sequence = serializers.IntegerField()
    base_memory_id = serializers.UUIDField(allow_null=True)
    status = serializers.ChoiceField(choices=ConversationMemory.Status.choices)
    generation_time_ms = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(allow_blank=True)
    created_at = IsoDateTimeField()
    updated_at = IsoDateTimeField()


class ExportChunkSerializer(serializers.Serializer):
    """An archived summary without its embedding vector."""

    id = serializers.UUIDField()
    content = serializers.CharField()
    message_range_start = serializers.IntegerField()
    message_range_end = serializers.IntegerField(help_text="Exclusive.")
    created_at = IsoDateTimeField()


class ExportConversationSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    legacy_id = serializers.UUIDField()
    title = serializers.CharField(allow_blank=True)
    persona = serializers.CharField(allow_blank=True)
    created_at = IsoDateTimeField()
    updated_at = IsoDateTimeField()
    last_message_at = IsoDateTimeField(allow_null=True)
    closed_at = IsoDateTimeField(allow_null=True)
    # The name the user said the family calls the legacy by, read from this conversation.
    called_name = serializers.CharField(allow_blank=True)
    session_state = ExportSessionStateSerializer(source="*")
    messages = ExportMessageSerializer(many=True)
    summaries = ExportSummarySerializer(many=True, source="memories")
    chunks = ExportChunkSerializer(many=True)
