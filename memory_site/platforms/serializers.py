"""Input and output of the platform's own endpoints: provisioning users, webhook endpoints."""

from rest_framework import serializers

from memory_site.core.strict import StrictInputSerializer
from memory_site.platforms.models import (
    EXTERNAL_ID_MAX_LENGTH,
    WEBHOOK_URL_MAX_LENGTH,
    PlatformUser,
    WebhookEndpoint,
)


class PlatformUserInputSerializer(StrictInputSerializer):
    # Trimming would make " a" and "a" one user; the service checks the rest.
    external_id = serializers.CharField(
        max_length=EXTERNAL_ID_MAX_LENGTH, trim_whitespace=False,
        help_text="The platform's own id of its user: at most 255 printable characters.",
    )


class PlatformUserSerializer(serializers.ModelSerializer):
    """A platform's user: the external id it sends in X-User-Id and the username it has here."""

    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = PlatformUser
        fields = ["external_id", "username", "created_at"]
        read_only_fields = fields


class WebhookEndpointInputSerializer(StrictInputSerializer):
    url = serializers.URLField(
        max_length=WEBHOOK_URL_MAX_LENGTH,
        help_text="An http or https URL that resolves to public addresses only.",
    )


class WebhookEndpointSerializer(serializers.ModelSerializer):
    """A webhook endpoint of the platform, without its secret."""

    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "active", "created_at"]
        read_only_fields = fields


class WebhookEndpointCreatedSerializer(WebhookEndpointSerializer):
    """A new endpoint with its signing secret: shown this once, never again."""

    class Meta(WebhookEndpointSerializer.Meta):
        fields = [*WebhookEndpointSerializer.Meta.fields, "secret"]
        read_only_fields = fields
