"""Memory subjects stored as a reader sees them (memory_site.core.text.visible_text): the
invisible and format characters of subjects written before are dropped, and a subject that held
nothing else becomes no subject. No two active memories can clash: their subjects were already
compared without those characters."""

from django.db import migrations

from memory_site.core.text import visible_text


def subjects_as_seen(apps, schema_editor):
    AgentMemory = apps.get_model("agent_memory", "AgentMemory")
    changed = []
    for memory in AgentMemory.objects.filter(subject__isnull=False).only("pk", "subject").iterator():
        seen = visible_text(memory.subject) or None
        if seen != memory.subject:
            memory.subject = seen
            changed.append(memory)
    AgentMemory.objects.bulk_update(changed, ["subject"], batch_size=500)


class Migration(migrations.Migration):

    dependencies = [
        ("agent_memory", "0004_memory_change_attribution"),
    ]

    operations = [
        migrations.RunPython(subjects_as_seen, migrations.RunPython.noop, elidable=True),
    ]
