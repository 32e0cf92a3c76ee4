"""App config of the project package: registers its system checks."""

from django.apps import AppConfig


class MemorySiteConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "memory_site"

    def ready(self) -> None:
        from memory_site import checks  # noqa: F401 - registers the system checks
