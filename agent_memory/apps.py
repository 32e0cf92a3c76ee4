"""App config for agent_memory."""

from django.apps import AppConfig


class AgentMemoryConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "agent_memory"
    verbose_name = "Agent memory"
