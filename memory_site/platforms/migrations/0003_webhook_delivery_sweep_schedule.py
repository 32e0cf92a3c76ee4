"""Register the webhook deliveries' sweep (memory_site.platforms.webhooks.delivery_sweep) as a
django-q2 schedule every WEBHOOK_SWEEP_INTERVAL_MINUTES (idempotent)."""

from django.conf import settings
from django.db import migrations

DELIVERY_SWEEP_TASK = "memory_site.platforms.webhooks.delivery_sweep"
DELIVERY_SWEEP_SCHEDULE_NAME = "webhook delivery sweep"


def create_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.update_or_create(
        name=DELIVERY_SWEEP_SCHEDULE_NAME,
        defaults={
            "func": DELIVERY_SWEEP_TASK,
            "schedule_type": "I",  # Schedule.MINUTES
            "minutes": settings.WEBHOOK_SWEEP_INTERVAL_MINUTES,
            "repeats": -1,
        },
    )


def delete_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.filter(name=DELIVERY_SWEEP_SCHEDULE_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("platforms", "0002_webhooks"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_schedule, delete_schedule)]
