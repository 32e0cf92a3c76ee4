"""API routes of the agent_memory app (paths relative to /api/)."""

urlpatterns: list = []
