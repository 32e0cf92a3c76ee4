"""The shape of GET /api/me/data's export: each app's export serializers over the rows its
`user_data_export` selector reads, composed (memory_site.privacy.selectors.user_data_export builds the
UserExport it serializes)."""

from rest_framework import serializers

from agent_memory.serializers import ExportAgentMemorySerializer, ExportPlaceSerializer
from conversations.serializers import ExportConversationSerializer
from facts.serializers import (
    ExportFactSerializer,
    ExportInvitationSerializer,
    ExportMembershipSerializer,
)
from memory_site.core.api import IsoDateTimeField


class ExportMetadataSerializer(serializers.Serializer):
    notes = serializers.ListField(child=serializers.CharField())
    embeddings_included = serializers.BooleanField()


class ExportTokenSerializer(serializers.Serializer):
    created = IsoDateTimeField()


class ExportAccountSerializer(serializers.Serializer):
    """The account row, never the password hash; API tokens by creation date, never the key."""

    username = serializers.CharField(source="user.username")
    email = serializers.CharField(source="user.email", allow_blank=True)
    first_name = serializers.CharField(source="user.first_name", allow_blank=True)
    last_name = serializers.CharField(source="user.last_name", allow_blank=True)
    date_joined = IsoDateTimeField(source="user.date_joined")
    last_login = IsoDateTimeField(source="user.last_login", allow_null=True)
    api_tokens = ExportTokenSerializer(many=True)


class ExportSerializer(serializers.Serializer):
    """Everything the service stores about the caller; nothing of other members."""

    schema_version = serializers.CharField()
    exported_at = IsoDateTimeField()
    metadata = ExportMetadataSerializer()
    account = ExportAccountSerializer(source="*")
    memberships = ExportMembershipSerializer(many=True, source="parts.memberships")
    invitations = ExportInvitationSerializer(many=True, source="parts.invitations")
    facts = ExportFactSerializer(many=True, source="parts.facts")
    conversations = ExportConversationSerializer(many=True, source="parts.conversations")
    agent_memories = ExportAgentMemorySerializer(many=True, source="parts.agent_memories")
    places = ExportPlaceSerializer(many=True, source="parts.places")


class ErasedCountsSerializer(serializers.Serializer):
    conversations = serializers.IntegerField()
    messages = serializers.IntegerField()
    summaries = serializers.IntegerField()
    chunks = serializers.IntegerField()
    agent_memories = serializers.IntegerField()
    memory_versions = serializers.IntegerField()
    places = serializers.IntegerField()
    place_mentions = serializers.IntegerField()
    facts = serializers.IntegerField()
    memberships = serializers.IntegerField()
    legacies_deleted = serializers.IntegerField()
    legacies_transferred = serializers.IntegerField()
    legacies_kept = serializers.IntegerField(
        help_text="Legacies left with no member that stay for other people's rows in them."
    )
    api_tokens = serializers.IntegerField()
    sessions = serializers.IntegerField(help_text="Signed-in sessions ended, on every device.")
    jobs = serializers.IntegerField(
        help_text="Job-queue rows that named your conversations or events."
    )
    webhook_deliveries = serializers.IntegerField()
    login_records = serializers.IntegerField(
        help_text="The login brake's records of your username."
    )


class ErasedSerializer(serializers.Serializer):
    erased = ErasedCountsSerializer()
    account_kept = serializers.CharField(help_text="The username; the account has no data left.")
