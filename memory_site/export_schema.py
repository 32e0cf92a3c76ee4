"""The shape of GET /api/me/data's export, for the OpenAPI schema; the apps' user_data_export
selectors build it (memory_site.me composes them)."""

from rest_framework import serializers

from agent_memory.models import AgentMemory
from conversations.models import Conversation, ConversationMemory, Message
from facts.models import LegacyFact, LegacyMembership


def _strings() -> serializers.ListField:
    return serializers.ListField(child=serializers.CharField())


class ExportMetadataSerializer(serializers.Serializer):
    notes = _strings()
    embeddings_included = serializers.BooleanField()


class ExportTokenSerializer(serializers.Serializer):
    created = serializers.DateTimeField()


class ExportAccountSerializer(serializers.Serializer):
    """The account row, never the password hash; API tokens by creation date, never the key."""

    username = serializers.CharField()
    email = serializers.CharField(allow_blank=True)
    first_name = serializers.CharField(allow_blank=True)
    last_name = serializers.CharField(allow_blank=True)
    date_joined = serializers.DateTimeField()
    last_login = serializers.DateTimeField(allow_null=True)
    api_tokens = ExportTokenSerializer(many=True)


class ExportMembershipSerializer(serializers.Serializer):
    legacy_id = serializers.UUIDField()
    legacy_name = serializers.CharField()
    role = serializers.ChoiceField(choices=LegacyMembership.Role.choices)
    joined_at = serializers.DateTimeField()
    created_the_legacy = serializers.BooleanField()


class ExportFactSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    legacy_id = serializers.UUIDField()
    legacy_name = serializers.CharField()
    category = serializers.ChoiceField(choices=LegacyFact.Category.choices)
    content = serializers.CharField()
    visibility = serializers.ChoiceField(choices=LegacyFact.Visibility.choices)
    source_conversation_id = serializers.UUIDField(allow_null=True)
    source_range_start = serializers.IntegerField(allow_null=True)
    source_range_end = serializers.IntegerField(allow_null=True)
    extracted_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ExportSessionStateSerializer(serializers.Serializer):
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
    idempotency_key = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()


class ExportSummarySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    memory_text = serializers.CharField(allow_blank=True)
    start_sequence = serializers.IntegerField()
    end_sequence = serializers.IntegerField()
    base_memory_id = serializers.UUIDField(allow_null=True)
    status = serializers.ChoiceField(choices=ConversationMemory.Status.choices)
    generation_time_ms = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ExportChunkSerializer(serializers.Serializer):
    """An archived summary without its embedding vector."""

    id = serializers.UUIDField()
    content = serializers.CharField()
    message_range_start = serializers.IntegerField()
    message_range_end = serializers.IntegerField(help_text="Exclusive.")
    created_at = serializers.DateTimeField()


class ExportConversationSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    legacy_id = serializers.UUIDField()
    title = serializers.CharField(allow_blank=True)
    persona = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    last_message_at = serializers.DateTimeField(allow_null=True)
    closed_at = serializers.DateTimeField(allow_null=True)
    session_state = ExportSessionStateSerializer()
    messages = ExportMessageSerializer(many=True)
    summaries = ExportSummarySerializer(many=True)
    chunks = ExportChunkSerializer(many=True)


class ExportMemoryVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    content = serializers.CharField()
    source_conversation_id = serializers.UUIDField(allow_null=True)
    source_message_id = serializers.UUIDField(allow_null=True)
    created_at = serializers.DateTimeField()


class ExportAgentMemorySerializer(serializers.Serializer):
    id = serializers.CharField()
    category = serializers.ChoiceField(choices=AgentMemory.Category.choices)
    subject = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    deleted_at = serializers.DateTimeField(allow_null=True)
    evicted_at = serializers.DateTimeField(allow_null=True)
    versions = ExportMemoryVersionSerializer(many=True)


class ExportPlaceMentionSerializer(serializers.Serializer):
    conversation_id = serializers.UUIDField(allow_null=True)
    message_id = serializers.UUIDField(allow_null=True)
    mentioned_at = serializers.DateTimeField()


class ExportPlaceSerializer(serializers.Serializer):
    place_id = serializers.CharField()
    name = serializers.CharField()
    notes = serializers.CharField(allow_blank=True)
    added_at = serializers.DateTimeField()
    mentions = ExportPlaceMentionSerializer(many=True)


class ExportSerializer(serializers.Serializer):
    """Everything the service stores about the caller; nothing of other members."""

    schema_version = serializers.CharField()
    exported_at = serializers.DateTimeField()
    metadata = ExportMetadataSerializer()
    account = ExportAccountSerializer()
    memberships = ExportMembershipSerializer(many=True)
    facts = ExportFactSerializer(many=True)
    conversations = ExportConversationSerializer(many=True)
    agent_memories = ExportAgentMemorySerializer(many=True)
    places = ExportPlaceSerializer(many=True)
