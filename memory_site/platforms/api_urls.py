"""The platforms' API, under /api/."""

from django.urls import path

from memory_site.platforms import apis

urlpatterns = [
    path("platform/users", apis.PlatformUserProvisionApi.as_view(), name="platform-users"),
    path("platform/webhooks", apis.WebhookEndpointListCreateApi.as_view(),
         name="platform-webhooks"),
    path("platform/webhooks/<int:endpoint_id>", apis.WebhookEndpointDetailApi.as_view(),
         name="platform-webhook-detail"),
]
