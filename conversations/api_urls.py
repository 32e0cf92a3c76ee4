"""API routes of the conversations app (paths relative to /api/): the message log, the agent's
side (context, turn, search, checkpoint) and the agent memories with their tools and commands,
which take a conversation of the caller's as their source."""

from django.urls import path

from conversations.apis import agent, log, memories

urlpatterns = [
    path("ai/conversations", log.ConversationListCreateApi.as_view(), name="api-conversations"),
    path(
        "ai/conversations/<uuid:conversation_id>",
        log.ConversationDetailApi.as_view(),
        name="api-conversation-detail",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/messages",
        log.MessageListCreateApi.as_view(),
        name="api-conversation-messages",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/messages/batch",
        log.MessageBatchCreateApi.as_view(),
        name="api-conversation-messages-batch",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/memory",
        log.RollingSummaryListApi.as_view(),
        name="api-conversation-memory",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/chunks",
        log.ConversationChunkListApi.as_view(),
        name="api-conversation-chunks",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/close",
        log.ConversationCloseApi.as_view(),
        name="api-conversation-close",
    ),
    path(
        "ai/legacies/<uuid:legacy_id>/search",
        agent.LegacySearchApi.as_view(),
        name="api-legacy-search",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/context",
        agent.ConversationContextApi.as_view(),
        name="api-conversation-context",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/turn",
        agent.ConversationTurnApi.as_view(),
        name="api-conversation-turn",
    ),
    path(
        "ai/conversations/<uuid:conversation_id>/checkpoint",
        agent.ConversationCheckpointApi.as_view(),
        name="api-conversation-checkpoint",
    ),
    path("memory", memories.MemoryListCreateApi.as_view(), name="api-memories"),
    # Before memory/<id>: "document" is also a well-formed short id (never issued).
    path("memory/document", memories.MemoryDocumentApi.as_view(), name="api-memory-document"),
    path("memory/<str:memory_id>", memories.MemoryDetailApi.as_view(), name="api-memory-detail"),
    path("tools", memories.ToolListApi.as_view(), name="api-tools"),
    path("tools/<str:name>", memories.ToolExecuteApi.as_view(), name="api-tool-execute"),
    path("commands", memories.CommandApi.as_view(), name="api-commands"),
]
