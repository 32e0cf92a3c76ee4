"""API routes of the agent's side (paths relative to /api/)."""

from django.urls import path

from conversations import agent_apis

urlpatterns = [
    path(
        "ai/legacies/<uuid:legacy_id>/search",
        agent_apis.LegacySearchApi.as_view(),
        name="api-legacy-search",
    ),
]
