"""Serializers of the memory, tools and commands API.

Input serializers check shapes; lengths and the rest are the services' rules (settings
read at call time), so the API, the tools and the dashboard answer alike.
"""

from rest_framework import serializers

from agent_memory.models import AgentMemory, AgentMemoryVersion


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
        fields = ["version", "content", "source_conversation_id", "source_message_id", "created_at"]


class MemoryDetailSerializer(MemorySerializer):
    versions = MemoryVersionSerializer(many=True, read_only=True)
    is_active = serializers.BooleanField(read_only=True)

    class Meta(MemorySerializer.Meta):
        fields = [*MemorySerializer.Meta.fields, "is_active", "deleted_at", "evicted_at", "versions"]


class MemoryUpdatedSerializer(MemorySerializer):
    """The memory after PUT, with the content before and after (seed 003: old → new)."""

    old_content = serializers.CharField(read_only=True)
    new_content = serializers.CharField(read_only=True)

    class Meta(MemorySerializer.Meta):
        fields = [*MemorySerializer.Meta.fields, "old_content", "new_content"]


class SourceInputSerializer(serializers.Serializer):
    """Where a write comes from: one of the caller's conversations and, optionally, a message."""

    conversation_id = serializers.UUIDField(required=False, allow_null=True)
    message_id = serializers.UUIDField(required=False, allow_null=True)


class MemoryCreateInputSerializer(SourceInputSerializer):
    content = serializers.CharField(trim_whitespace=True)
    category = serializers.ChoiceField(choices=AgentMemory.Category.choices)
    subject = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, trim_whitespace=True
    )


class MemoryUpdateInputSerializer(SourceInputSerializer):
    content = serializers.CharField(trim_whitespace=True)


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


class ToolResultSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    tool = serializers.CharField(required=False)
    result = serializers.DictField(required=False)
    code = serializers.CharField(required=False)
    detail = serializers.CharField(required=False)
    errors = serializers.DictField(required=False)


class ToolListSerializer(serializers.Serializer):
    tools = serializers.ListField(child=serializers.DictField())
    total = serializers.IntegerField()


class CommandInputSerializer(serializers.Serializer):
    text = serializers.CharField(allow_blank=True, trim_whitespace=True)


class CommandReplySerializer(serializers.Serializer):
    reply = serializers.CharField()
    detail = serializers.CharField(required=False)
    code = serializers.CharField(required=False)
