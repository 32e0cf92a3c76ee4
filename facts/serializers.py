"""Serializers of the legacies API."""

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from facts.models import Legacy, LegacyFact, LegacyInvitation, LegacyMembership
from facts.selectors import (
    external_id_of,
    fact_corrections_visible,
    realm_of,
    successor_visible_to,
)
from memory_site.core.api import IsoDateTimeField
from memory_site.core.strict import StrictInputSerializer, TextField

# The services' words for a fact's length (facts.services._validate_fact_fields).
FACT_LENGTH = "Must be {minimum}–{maximum} characters."


class LegacyInputSerializer(StrictInputSerializer):
    name = serializers.CharField(max_length=200, trim_whitespace=True)


_EXTERNAL_ID_HELP = ("The platform's own id for this user (its X-User-Id) when a platform "
                     "provisioned them; null for a person who signs in here.")


class LegacySerializer(serializers.ModelSerializer):
    role = serializers.CharField(source="my_role", read_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True)
    # As the family list names its members (found by a live check: a platform saw only the
    # creator's internal username).
    created_by_external_id = serializers.SerializerMethodField(help_text=_EXTERNAL_ID_HELP)

    class Meta:
        model = Legacy
        fields = ["id", "name", "created_by", "created_by_external_id", "created_at", "role"]

    def get_created_by_external_id(self, legacy: Legacy) -> str | None:
        return external_id_of(legacy.created_by)


# A person is named by username (at most 150 characters here), a platform's user by external
# id (X-User-Id: at most 255, memory_site.platforms.models.EXTERNAL_ID_MAX_LENGTH, which facts
# may not import): a longer name names nobody either way.
NAMED_MAX_CHARS = 255


# A name no one here can have, refused as the schema says (pattern): a username in the form
# this service gives a platform's users (`p<platform>:<external id>`: a platform names people
# by external id, and a person's username has no ':' or '#'), whitespace at either end (not
# trimmed into someone else's name), or a '/' at its end (API paths lose a trailing slash).
NAMED_PATTERN = r"^(?!p[0-9]+[:#])(?!\s)(?![\s\S]*[\s/]$)[\s\S]+$"
_NAMED_REFUSED = (
    "Name a person by username, or a platform's user by their external id (X-User-Id): not by "
    "a username of the form p<platform>:<external id>, and with no whitespace at either end "
    "nor '/' at the end.")


def _named_field() -> serializers.CharField:
    # Not trimmed: " ann " is no name, rather than `ann`, someone else.
    return serializers.CharField(
        max_length=NAMED_MAX_CHARS, trim_whitespace=False,
        validators=[RegexValidator(NAMED_PATTERN, _NAMED_REFUSED)])


class MemberInputSerializer(StrictInputSerializer):
    username = _named_field()
    role = serializers.ChoiceField(choices=LegacyMembership.Role.choices, default="member")



class MembershipSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    external_id = serializers.SerializerMethodField(help_text=_EXTERNAL_ID_HELP)
    legacy_id = serializers.UUIDField(read_only=True)

    class Meta:
        model = LegacyMembership
        fields = ["id", "legacy_id", "username", "external_id", "role", "joined_at"]

    def get_external_id(self, membership: LegacyMembership) -> str | None:
        return external_id_of(membership.user)


class FamilyMemberSerializer(serializers.ModelSerializer):
    """One member of a legacy's family, as every member sees them."""

    username = serializers.CharField(source="user.username", read_only=True)
    external_id = serializers.SerializerMethodField(help_text=_EXTERNAL_ID_HELP)

    class Meta:
        model = LegacyMembership
        fields = ["username", "external_id", "role", "joined_at"]

    def get_external_id(self, membership: LegacyMembership) -> str | None:
        return external_id_of(membership.user)


class FamilySerializer(serializers.Serializer):
    """The family of a legacy, longest-standing member first."""

    members = FamilyMemberSerializer(many=True)
    total = serializers.IntegerField()


class MembershipEndedSerializer(serializers.Serializer):
    """What a member leaving, or being removed, did (docs/facts.md "Family")."""

    username = serializers.CharField(help_text="Who is no longer a member (their username, as "
                                     "the family list gives it).")
    external_id = serializers.CharField(allow_null=True, help_text=_EXTERNAL_ID_HELP)
    facts_made_private = serializers.IntegerField(
        help_text="How many of their shared facts about the legacy became private."
    )
    new_owner = serializers.CharField(
        allow_null=True, help_text="Who became owner because the only owner left, or null."
    )
    new_owner_external_id = serializers.CharField(
        allow_null=True, help_text="The new owner's external id (see `external_id`), or null.")


class InvitationInputSerializer(StrictInputSerializer):
    username = _named_field()
    role = serializers.ChoiceField(choices=LegacyMembership.Role.choices, default="member")


class InvitationSentSerializer(serializers.Serializer):
    """The answer to an invitation, the same whether an account of that name exists or not."""

    username = serializers.CharField()
    role = serializers.ChoiceField(choices=LegacyMembership.Role.choices)
    detail = serializers.CharField()


class LegacyInvitationSerializer(serializers.ModelSerializer):
    """A pending invitation of a legacy, as its owners see it."""

    invited_by = serializers.CharField(source="invited_by.username", read_only=True)
    external_id = serializers.SerializerMethodField(
        help_text="The invitee's platform id (its X-User-Id) when the invitation reaches a "
        "platform's user; null otherwise.")

    class Meta:
        model = LegacyInvitation
        fields = ["id", "username", "external_id", "role", "invited_by", "created_at"]

    def get_external_id(self, invitation: LegacyInvitation) -> str | None:
        # Only within the inviter's realm: an invitation written across realms before the rule
        # must not tell the owner that an account of another platform exists.
        invitee = invitation.invited_user
        if invitee is None or realm_of(invitee) != realm_of(invitation.invited_by):
            return None
        return external_id_of(invitee)


class InvitationSerializer(serializers.ModelSerializer):
    """An invitation as its invitee sees it."""

    legacy_id = serializers.UUIDField(read_only=True)
    legacy_name = serializers.CharField(source="legacy.name", read_only=True)
    invited_by = serializers.CharField(source="invited_by.username", read_only=True)
    invited_by_external_id = serializers.SerializerMethodField(
        help_text="The inviter's platform id (its X-User-Id) when a platform provisioned them; "
        "null otherwise.")

    class Meta:
        model = LegacyInvitation
        fields = ["id", "legacy_id", "legacy_name", "invited_by", "invited_by_external_id",
                  "role", "status", "created_at"]

    def get_invited_by_external_id(self, invitation: LegacyInvitation) -> str | None:
        return external_id_of(invitation.invited_by)


class InvitationListSerializer(serializers.Serializer):
    invitations = InvitationSerializer(many=True)
    total = serializers.IntegerField()


class LegacyInvitationListSerializer(serializers.Serializer):
    invitations = LegacyInvitationSerializer(many=True)
    total = serializers.IntegerField()


class CorrectedFactSerializer(serializers.ModelSerializer):
    """A value a later fact corrected, as history (docs/facts.md "Corrections")."""

    source_conversation_id = serializers.UUIDField(read_only=True, allow_null=True)

    class Meta:
        model = LegacyFact
        fields = [
            "id", "category", "content", "visibility", "source_conversation_id",
            "source_range_start", "source_range_end", "extracted_at", "superseded_at",
        ]


class FactSerializer(serializers.ModelSerializer):
    """A legacy fact as the API shows it; `is_mine` and `corrects` need the request in the
    context (`corrections`, selectors.fact_corrections_visible of the page, saves a query per
    fact)."""

    legacy_id = serializers.UUIDField(read_only=True)
    author = serializers.CharField(source="user.username", read_only=True)
    is_mine = serializers.SerializerMethodField()
    source_conversation_id = serializers.UUIDField(read_only=True, allow_null=True)
    is_current = serializers.BooleanField(
        read_only=True, help_text="False once a later fact of the author corrected it."
    )
    superseded_by = serializers.SerializerMethodField(
        help_text="The fact that corrected this one, or null while it is current (and for "
        "another member's fact whose correction they keep private).",
    )
    superseded_at = serializers.SerializerMethodField(
        help_text="When it was corrected; null as superseded_by is.")
    corrects = serializers.SerializerMethodField(
        help_text="The earlier values this fact corrected (that I may see), oldest first."
    )

    class Meta:
        model = LegacyFact
        fields = [
            "id", "legacy_id", "category", "content", "visibility", "author", "is_mine",
            "source_conversation_id", "source_range_start", "source_range_end",
            "extracted_at", "updated_at", "is_current", "superseded_by", "superseded_at",
            "corrects",
        ]

    def get_is_mine(self, fact: LegacyFact) -> bool:
        return fact.user_id == self.context["request"].user.pk

    @extend_schema_field(serializers.UUIDField(allow_null=True))
    def get_superseded_by(self, fact: LegacyFact) -> str | None:
        if not successor_visible_to(self.context["request"].user, fact):
            return None
        return str(fact.superseded_by_id) if fact.superseded_by_id else None

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_superseded_at(self, fact: LegacyFact) -> str | None:
        if fact.superseded_at is None or not successor_visible_to(
                self.context["request"].user, fact):
            return None
        return serializers.DateTimeField().to_representation(fact.superseded_at)

    @extend_schema_field(CorrectedFactSerializer(many=True))
    def get_corrects(self, fact: LegacyFact) -> list[dict]:
        corrections = self.context.get("corrections")
        if corrections is None or fact.pk not in corrections:
            corrections = fact_corrections_visible(user=self.context["request"].user,
                                                   facts=[fact])
        return CorrectedFactSerializer(corrections[fact.pk], many=True).data


class FactCreatedSerializer(FactSerializer):
    """The answer to adding a fact: `duplicate` says an existing fact was returned instead."""

    duplicate = serializers.SerializerMethodField()

    class Meta(FactSerializer.Meta):
        fields = [*FactSerializer.Meta.fields, "duplicate"]

    def get_duplicate(self, fact: LegacyFact) -> bool:
        return bool(self.context.get("duplicate"))


class FactListQuerySerializer(StrictInputSerializer):
    category = serializers.ChoiceField(choices=LegacyFact.Category.choices, required=False)
    visibility = serializers.ChoiceField(choices=LegacyFact.Visibility.choices, required=False)
    mine = serializers.BooleanField(required=False, default=False)
    q = serializers.CharField(required=False, allow_blank=True, max_length=200)
    include_corrected = serializers.BooleanField(
        required=False, default=False,
        help_text="Also list the facts later facts corrected (`is_current: false`).",
    )


class CorrectionUndoneSerializer(serializers.Serializer):
    """What undoing a correction did."""

    restored = FactSerializer(many=True, help_text="The corrected facts, current again.")
    removed_fact_id = serializers.UUIDField(
        allow_null=True,
        help_text="The correction, now deleted; null when the author had stated it before the "
        "correction found it again: it stays, current.",
    )


class ConflictSerializer(serializers.Serializer):
    """Two members' current facts that state different values of one attribute."""

    id = serializers.UUIDField()
    attribute = serializers.CharField(help_text="What both facts state: `married_year`, …")
    facts = FactSerializer(many=True)
    detected_at = serializers.DateTimeField()


class FactInputSerializer(StrictInputSerializer):
    """The content's length rule (FACT_MIN_CHARS..FACT_MAX_CHARS) is fact_create's."""

    category = serializers.ChoiceField(choices=LegacyFact.Category.choices)
    content = TextField(min_setting="FACT_MIN_CHARS", max_setting="FACT_MAX_CHARS",
                        too_long=FACT_LENGTH)
    visibility = serializers.ChoiceField(
        choices=LegacyFact.Visibility.choices, default=LegacyFact.Visibility.PRIVATE
    )


class FactUpdateSerializer(StrictInputSerializer):
    category = serializers.ChoiceField(choices=LegacyFact.Category.choices, required=False)
    content = TextField(min_setting="FACT_MIN_CHARS", max_setting="FACT_MAX_CHARS",
                        too_long=FACT_LENGTH, required=False)


class FactVisibilitySerializer(StrictInputSerializer):
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


class ExportInvitationSerializer(serializers.Serializer):
    """An invitation the user sent (`sent`) or received (`received`), in any state."""

    id = serializers.UUIDField()
    legacy_id = serializers.UUIDField()
    legacy_name = serializers.CharField(source="legacy.name")
    direction = serializers.ChoiceField(choices=["sent", "received"])
    username = serializers.CharField(help_text="The username it was sent to, as typed.")
    invited_by = serializers.CharField(source="invited_by.username")
    role = serializers.ChoiceField(choices=LegacyMembership.Role.choices)
    status = serializers.ChoiceField(choices=LegacyInvitation.Status.choices)
    created_at = IsoDateTimeField()
    answered_at = IsoDateTimeField(allow_null=True)


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
    # The whole history: a corrected fact stays in the export with what replaced it.
    superseded_by_id = serializers.UUIDField(allow_null=True)
    superseded_at = IsoDateTimeField(allow_null=True)
