"""App config of the platforms: registers the OpenAPI scheme of their keys, and the webhook
receivers check and fan-out with memory_site.core.events."""

from django.apps import AppConfig


class PlatformsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "memory_site.platforms"
    label = "platforms"
    verbose_name = "Platforms"

    def ready(self) -> None:
        from memory_site.core import events
        from memory_site.platforms import schema  # noqa: F401 - registers the OpenAPI extension
        from memory_site.platforms.webhooks import fan_out, has_receivers

        events.register_receivers_check(has_receivers)
        events.register_fan_out(fan_out)
