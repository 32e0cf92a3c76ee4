"""API routes of the conversations app (paths relative to /api/)."""

from django.urls import path

from conversations import apis

urlpatterns = [
    path("ai/conversations", apis.ConversationListCreateApi.as_view(), name="api-conversations"),
    path(
        "ai/conversations/<uuid:conversation_id>",
        apis.ConversationDetailApi.as_view(),
        name="api-conversation-detail",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/messages",
        apis.MessageListCreateApi.as_view(),
        name="api-conversation-messages",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/memory",
        apis.ConversationMemoryListApi.as_view(),
        name="api-conversation-memory",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/chunks",
        apis.ConversationChunkListApi.as_view(),
        name="api-conversation-chunks",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/close",
        apis.ConversationCloseApi.as_view(),
        name="api-conversation-close",
    ),
]
