"""API routes of the agent's side (paths relative to /api/)."""

from django.urls import path

from conversations import agent_apis

urlpatterns = [
    path(
        "ai/legacies/<uuid:legacy_id>/search",
        agent_apis.LegacySearchApi.as_view(),
        name="api-legacy-search",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/context",
        agent_apis.ConversationContextApi.as_view(),
        name="api-conversation-context",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/turn",
        agent_apis.ConversationTurnApi.as_view(),
        name="api-conversation-turn",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/checkpoint",
        agent_apis.ConversationCheckpointApi.as_view(),
        name="api-conversation-checkpoint",
    ),
]
