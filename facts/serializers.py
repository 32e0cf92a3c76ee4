"""Serializers of the legacies API."""

from rest_framework import serializers

from facts.models import Legacy, LegacyFact, LegacyMembership
from memory_site.core.api import IsoDateTimeField


class LegacyInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, trim_whitespace=True)


class LegacySerializer(serializers.ModelSerializer):
    role = serializers.CharField(source="my_role", read_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True)

    class Meta:
        model = Legacy
        fields = ["id", "name", "created_by", "created_at", "role"]


class MemberInputSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=LegacyMembership.Role.choices, default="member")


class MembershipSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    legacy_id = serializers.UUIDField(read_only=True)

    class Meta:
        model = LegacyMembership
        fields = ["id", "legacy_id", "username", "role", "joined_at"]


class FactSerializer(serializers.ModelSerializer):
    """A legacy fact as the API shows it; `is_mine` needs the request in the context."""

    legacy_id = serializers.UUIDField(read_only=True)
    author = serializers.CharField(source="user.username", read_only=True)
    is_mine = serializers.SerializerMethodField()
    source_conversation_id = serializers.UUIDField(read_only=True, allow_null=True)

    class Meta:
        model = LegacyFact
        fields = [
            "id", "legacy_id", "category", "content", "visibility", "author", "is_mine",
            "source_conversation_id", "source_range_start", "source_range_end",
            "extracted_at", "updated_at",
        ]

    def get_is_mine(self, fact: LegacyFact) -> bool:
        return fact.user_id == self.context["request"].user.pk


class FactCreatedSerializer(FactSerializer):
    """The answer to adding a fact: `duplicate` says an existing fact was returned instead."""

    duplicate = serializers.SerializerMethodField()

    class Meta(FactSerializer.Meta):
        fields = [*FactSerializer.Meta.fields, "duplicate"]

    def get_duplicate(self, fact: LegacyFact) -> bool:
        return bool(self.context.get("duplicate"))


class FactListQuerySerializer(serializers.Serializer):
    category = serializers.ChoiceField(choices=LegacyFact.Category.choices, required=False)
    visibility = serializers.ChoiceField(choices=LegacyFact.Visibility.choices, required=False)
    mine = serializers.BooleanField(required=False, default=False)
    q = serializers.CharField(required=False, allow_blank=True, max_length=200)


class FactInputSerializer(serializers.Serializer):
    """The content's length rule (FACT_MIN_CHARS..FACT_MAX_CHARS) is fact_create's."""

    category = serializers.ChoiceField(choices=LegacyFact.Category.choices)
    content = serializers.CharField(trim_whitespace=False, allow_blank=True)
    visibility = serializers.ChoiceField(
        choices=LegacyFact.Visibility.choices, default=LegacyFact.Visibility.PRIVATE
    )


class FactUpdateSerializer(serializers.Serializer):
    category = serializers.ChoiceField(choices=LegacyFact.Category.choices, required=False)
    content = serializers.CharField(required=False, trim_whitespace=False, allow_blank=True)


class FactVisibilitySerializer(serializers.Serializer):
    visibility = serializers.ChoiceField(choices=LegacyFact.Visibility.choices)


# --- The caller's export (GET /api/me/data; rows from selectors.user_data_export) ---


class ExportMembershipSerializer(serializers.Serializer):
    legacy_id = serializers.UUIDField()
    legacy_name = serializers.CharField(source="legacy.name")
    role = serializers.ChoiceField(choices=LegacyMembership.Role.choices)
    joined_at = IsoDateTimeField()
    created_the_legacy = serializers.SerializerMethodField()

    def get_created_the_legacy(self, membership: LegacyMembership) -> bool:
        return membership.legacy.created_by_id == membership.user_id


class ExportFactSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    legacy_id = serializers.UUIDField()
    legacy_name = serializers.CharField(source="legacy.name")
    category = serializers.ChoiceField(choices=LegacyFact.Category.choices)
    content = serializers.CharField()
    visibility = serializers.ChoiceField(choices=LegacyFact.Visibility.choices)
    source_conversation_id = serializers.UUIDField(allow_null=True)
    source_range_start = serializers.IntegerField(allow_null=True)
    source_range_end = serializers.IntegerField(allow_null=True)
    extracted_at = IsoDateTimeField()
    updated_at = IsoDateTimeField()
