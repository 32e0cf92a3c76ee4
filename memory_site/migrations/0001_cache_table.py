"""The database cache's table (rate-limit state shared by every process when REDIS_URL is unset),
created whatever CACHES says at migrate time, so that dropping REDIS_URL later just works."""

from django.core.management.commands.createcachetable import Command as CreateCacheTable
from django.db import migrations

# settings.CACHES["default"]["LOCATION"] without REDIS_URL.
CACHE_TABLE = "memory_site_cache"


def create_cache_table(apps, schema_editor):
    command = CreateCacheTable()
    command.verbosity = 0
    command.create_table(schema_editor.connection.alias, CACHE_TABLE, dry_run=False)


def drop_cache_table(apps, schema_editor):
    schema_editor.execute(f"DROP TABLE IF EXISTS {schema_editor.quote_name(CACHE_TABLE)}")


class Migration(migrations.Migration):
    dependencies = []

    operations = [migrations.RunPython(create_cache_table, drop_cache_table)]
