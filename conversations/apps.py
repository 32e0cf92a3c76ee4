"""App config for conversations: registers its system checks, and sets the search's HNSW
settings on each new connection."""

from django.apps import AppConfig
from django.db.backends.signals import connection_created


class ConversationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "conversations"

    def ready(self) -> None:
        from conversations import checks  # noqa: F401 - registers the system checks
        from conversations.retrieval import hnsw_session_settings

        connection_created.connect(hnsw_session_settings,
                                   dispatch_uid="conversations.hnsw_session_settings")
