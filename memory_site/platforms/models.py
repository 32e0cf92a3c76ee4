"""A platform, its keys (hashed at rest by djangorestframework-api-key) and its users."""

from django.conf import settings
from django.db import models
from rest_framework_api_key.models import AbstractAPIKey

EXTERNAL_ID_MAX_LENGTH = 255


class Platform(models.Model):
    """A service (the chat frontend) that acts for its own users. Its users outlive its keys:
    a revoked key is replaced by a new one of the same platform."""

    name = models.CharField(max_length=50, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class PlatformKey(AbstractAPIKey):
    """One key of a platform: only its prefix and a SHA-512 hash are stored."""

    platform = models.ForeignKey(Platform, on_delete=models.CASCADE, related_name="keys")

    class Meta(AbstractAPIKey.Meta):
        verbose_name = "platform key"
        verbose_name_plural = "platform keys"


class PlatformUser(models.Model):
    """A user of a platform, known to it by its external id, acting here as a Django user of
    their own: one platform never reaches another's users, even with the same external id."""

    platform = models.ForeignKey(Platform, on_delete=models.CASCADE, related_name="users")
    external_id = models.CharField(max_length=EXTERNAL_ID_MAX_LENGTH)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="platform_user"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["platform", "external_id"], name="platform_user_external_id_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.platform} / {self.external_id}"


WEBHOOK_URL_MAX_LENGTH = 2000


class WebhookEndpoint(models.Model):
    """A URL of a platform that receives its users' events, signed with the endpoint's secret
    (shown once, at creation)."""

    platform = models.ForeignKey(Platform, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=WEBHOOK_URL_MAX_LENGTH)
    secret = models.CharField(max_length=100, editable=False)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name = "webhook endpoint"

    def __str__(self) -> str:
        return f"{self.platform} → {self.url}"


class WebhookDelivery(models.Model):
    """One event on its way to one endpoint: attempted until delivered or out of attempts."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    event_id = models.UUIDField()
    event_type = models.CharField(max_length=50)
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "webhook delivery"
        verbose_name_plural = "webhook deliveries"
        constraints = [
            # fan_out run twice for one event delivers it once per endpoint.
            models.UniqueConstraint(
                fields=["endpoint", "event_id"], name="webhook_delivery_event_unique"
            )
        ]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id} → {self.endpoint_id} ({self.status})"
