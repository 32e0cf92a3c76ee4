"""Serializers of the legacies API."""

from rest_framework import serializers

from facts.models import Legacy, LegacyMembership


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
