"""Register the conversation-memory sweep as a django-q2 schedule (idempotent)."""

from django.conf import settings
from django.db import migrations

SWEEP_TASK = "conversations.tasks.sweep"
SWEEP_SCHEDULE_NAME = "conversation memory sweep"


def create_sweep_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.update_or_create(
        name=SWEEP_SCHEDULE_NAME,
        defaults={
            "func": SWEEP_TASK,
            "schedule_type": "I",  # Schedule.MINUTES
            "minutes": settings.MEMORY_SWEEP_INTERVAL_MINUTES,
            "repeats": -1,
        },
    )


def delete_sweep_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.filter(name=SWEEP_SCHEDULE_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0002_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_sweep_schedule, delete_sweep_schedule)]
