"""API routes of the agent_memory app (paths relative to /api/)."""

from django.urls import path

from agent_memory import apis

urlpatterns = [
    path("memory", apis.MemoryListCreateApi.as_view(), name="api-memories"),
    # Before memory/<id>: "document" is also a well-formed short id (never issued).
    path("memory/document", apis.MemoryDocumentApi.as_view(), name="api-memory-document"),
    path("memory/<str:memory_id>", apis.MemoryDetailApi.as_view(), name="api-memory-detail"),
    path("tools", apis.ToolListApi.as_view(), name="api-tools"),
    path("tools/<str:name>", apis.ToolExecuteApi.as_view(), name="api-tool-execute"),
    path("commands", apis.CommandApi.as_view(), name="api-commands"),
]
