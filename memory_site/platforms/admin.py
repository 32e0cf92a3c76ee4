"""Staff's views of platforms, their keys (created here too, shown once) and their users."""

from django.contrib import admin
from rest_framework_api_key.admin import APIKeyModelAdmin
from rest_framework_api_key.models import APIKey

from memory_site.platforms.models import (
    Platform,
    PlatformKey,
    PlatformUser,
    WebhookDelivery,
    WebhookEndpoint,
)

# The library's own keys belong to no platform and authenticate nothing here.
admin.site.unregister(APIKey)


@admin.register(Platform)
class PlatformAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]


@admin.register(PlatformKey)
class PlatformKeyAdmin(APIKeyModelAdmin):
    list_display = [*APIKeyModelAdmin.list_display, "platform"]
    list_filter = ["platform", "revoked", "created"]
    autocomplete_fields = ["platform"]

    def get_readonly_fields(self, request, obj=None):
        # A key moved to another platform would act for that platform's users.
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "platform"] if obj is not None else fields


@admin.register(PlatformUser)
class PlatformUserAdmin(admin.ModelAdmin):
    list_display = ["external_id", "platform", "user", "created_at"]
    list_filter = ["platform"]
    search_fields = ["external_id", "user__username"]
    readonly_fields = ["platform", "external_id", "user", "created_at"]


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    list_display = ["url", "platform", "active", "created_at"]
    list_filter = ["platform", "active"]
    search_fields = ["url"]
    # The secret is shown once, to the platform that registered the endpoint.
    exclude = ["secret"]
    readonly_fields = ["platform", "url", "created_at"]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = [
        "event_type", "event_id", "endpoint", "status", "attempts", "last_status_code",
        "next_attempt_at", "created_at", "delivered_at",
    ]
    list_filter = ["status", "event_type", "endpoint__platform"]
    search_fields = ["event_id", "endpoint__url"]
    list_select_related = ["endpoint__platform"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
