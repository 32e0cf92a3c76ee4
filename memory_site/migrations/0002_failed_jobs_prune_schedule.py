"""Register the daily prune of failed jobs (memory_site.privacy.tasks.failed_jobs_prune) as a
django-q2 schedule (idempotent): django-q2's save_limit prunes successes only."""

from django.db import migrations

PRUNE_TASK = "memory_site.privacy.tasks.failed_jobs_prune"
PRUNE_SCHEDULE_NAME = "failed jobs prune"


def create_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.update_or_create(
        name=PRUNE_SCHEDULE_NAME,
        defaults={"func": PRUNE_TASK, "schedule_type": "D", "repeats": -1},  # Schedule.DAILY
    )


def delete_schedule(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.filter(name=PRUNE_SCHEDULE_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("memory_site", "0001_cache_table"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_schedule, delete_schedule)]
