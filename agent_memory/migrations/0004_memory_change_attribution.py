"""Who changed a memory: each version's origin (agent, dashboard, API, /memory) and the version a
restore brought back; who deleted a memory, and the turn's user message when the agent did."""

import django.db.models.deletion
from django.db import migrations, models

ORIGINS = [
    ("agent", "the agent, in a chat turn"),
    ("dashboard", "you, on the dashboard"),
    ("api", "you, through the API"),
    ("command", "you, with /memory"),
    ("unknown", "before changes were attributed"),
]


class Migration(migrations.Migration):

    dependencies = [
        ("agent_memory", "0003_memory_eviction_and_source_message"),
        ("conversations", "0002_initial"),
    ]

    operations = [
        # Versions written before this migration cannot say who wrote them.
        migrations.AddField(
            model_name="agentmemoryversion",
            name="origin",
            field=models.CharField(choices=ORIGINS, default="unknown", max_length=16),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="agentmemoryversion",
            name="restored_from",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="agentmemory",
            name="deleted_origin",
            field=models.CharField(blank=True, choices=ORIGINS, default="", max_length=16),
        ),
        migrations.AddField(
            model_name="agentmemory",
            name="deleted_source_message",
            field=models.ForeignKey(
                blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                related_name="memory_deletions", to="conversations.message",
            ),
        ),
    ]
