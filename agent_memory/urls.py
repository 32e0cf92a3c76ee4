"""Dashboard routes of the agent_memory app."""

from django.urls import path  # noqa: F401

app_name = "agent_memory"

urlpatterns: list = []
