"""Register the embedding sweep (conversations.tasks.embedding_sweep) as a django-q2 schedule,
at the interval of the conversation memory sweep (idempotent)."""

from django.conf import settings
from django.db import migrations

EMBEDDING_SWEEP_TASK = "conversations.tasks.embedding_sweep"
EMBEDDING_SWEEP_SCHEDULE_NAME = "conversation embedding sweep"


def create_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.update_or_create(
        name=EMBEDDING_SWEEP_SCHEDULE_NAME,
        defaults={
            "func": EMBEDDING_SWEEP_TASK,
            "schedule_type": "I",  # Schedule.MINUTES
            "minutes": settings.MEMORY_SWEEP_INTERVAL_MINUTES,
            "repeats": -1,
        },
    )


def delete_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.filter(name=EMBEDDING_SWEEP_SCHEDULE_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0005_message_units_embedding_search_vector"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_schedule, delete_schedule)]
