"""Serializers of the legacies API."""

from rest_framework import serializers

from facts.models import Legacy, LegacyFact, LegacyInvitation, LegacyMembership
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


class FamilyMemberSerializer(serializers.ModelSerializer):
    """One member of a legacy's family, as every member sees them."""

    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = LegacyMembership
        fields = ["username", "role", "joined_at"]


class FamilySerializer(serializers.Serializer):
    """The family of a legacy, longest-standing member first."""

    members = FamilyMemberSerializer(many=True)
    total = serializers.IntegerField()


class MembershipEndedSerializer(serializers.Serializer):
    """What a member leaving, or being removed, did (docs/facts.md "Family")."""

    username = serializers.CharField(help_text="Who is no longer a member.")
    facts_made_private = serializers.IntegerField(
        help_text="How many of their shared facts about the legacy became private."
    )
    new_owner = serializers.CharField(
        allow_null=True, help_text="Who became owner because the only owner left, or null."
    )


class InvitationInputSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=LegacyMembership.Role.choices, default="member")


class InvitationSentSerializer(serializers.Serializer):
    """The answer to an invitation, the same whether an account of that name exists or not."""

    username = serializers.CharField()
    role = serializers.ChoiceField(choices=LegacyMembership.Role.choices)
    detail = serializers.CharField()


class LegacyInvitationSerializer(serializers.ModelSerializer):
    """A pending invitation of a legacy, as its owners see it."""

    invited_by = serializers.CharField(source="invited_by.username", read_only=True)

    class Meta:
        model = LegacyInvitation
        fields = ["id", "username", "role", "invited_by", "created_at"]


class InvitationSerializer(serializers.ModelSerializer):
    """An invitation as its invitee sees it."""

    legacy_id = serializers.UUIDField(read_only=True)
    legacy_name = serializers.CharField(source="legacy.name", read_only=True)
    invited_by = serializers.CharField(source="invited_by.username", read_only=True)

    class Meta:
        model = LegacyInvitation
        fields = ["id", "legacy_id", "legacy_name", "invited_by", "role", "status", "created_at"]


class InvitationListSerializer(serializers.Serializer):
    invitations = InvitationSerializer(many=True)
    total = serializers.IntegerField()


class LegacyInvitationListSerializer(serializers.Serializer):
    invitations = LegacyInvitationSerializer(many=True)
    total = serializers.IntegerField()


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
