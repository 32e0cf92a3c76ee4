"""Reads of the platforms, scoped to the calling platform: its webhook endpoints."""

from django.db.models import QuerySet

from memory_site.core.errors import NotFound
from memory_site.platforms.models import Platform, WebhookEndpoint


def webhook_endpoints_for_platform(platform: Platform) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(platform=platform)


def webhook_endpoint_for_platform(*, platform: Platform, endpoint_id: int) -> WebhookEndpoint:
    """The platform's endpoint; NotFound for a missing one or another platform's."""
    endpoint = webhook_endpoints_for_platform(platform).filter(pk=endpoint_id).first()
    if endpoint is None:
        raise NotFound("No such webhook endpoint.")
    return endpoint
