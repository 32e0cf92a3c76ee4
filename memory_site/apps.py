"""App config of the project package: registers its system checks, and plans each run of a
prepared statement for its values."""

from typing import Any

from django.apps import AppConfig
from django.db.backends.signals import connection_created


def plan_for_each_run(sender: Any, connection: Any, **kwargs: Any) -> None:
    """A statement prepared on the server (memory_site.core.sql.prepared_cursor) is planned for
    the values of each run: after five runs PostgreSQL may otherwise keep a generic plan, made
    without the values (the scope's conversations, the list lengths), and serve a scope of
    10,000 units with the plan of one of 100. Set once per new connection, when statements
    are prepared (DB_PREPARED_STATEMENTS)."""
    if connection.settings_dict.get("OPTIONS", {}).get("prepare_threshold") is None:
        return
    with connection.cursor() as cursor:
        cursor.execute("SET plan_cache_mode = force_custom_plan")


class MemorySiteConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "memory_site"

    def ready(self) -> None:
        from memory_site import checks  # noqa: F401 - registers the system checks

        connection_created.connect(plan_for_each_run, dispatch_uid="memory_site.plan_for_each_run")
