"""The unique index of a user's conversation Idempotency-Keys, built CONCURRENTLY: the
conversations table is read and updated by every request (each message appended updates its
conversation's row), and a plain CREATE INDEX would hold them all while it reads the table.
The index is partial (keyed conversations only) and is Django's UniqueConstraint of the model,
so the state records the constraint and the database builds its index."""

from django.db import migrations, models

INDEX = "conversation_idempotency_key_unique"


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("conversations", "0010_conversation_idempotency_key"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddConstraint(
                    model_name="conversation",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("idempotency_key__isnull", False)),
                        fields=("user", "idempotency_key"),
                        name=INDEX,
                    ),
                ),
            ],
            database_operations=[
                # Keys stored twice while the code ran before the index (a rolling deploy): the
                # first conversation keeps its key, the later ones lose theirs.
                migrations.RunSQL(
                    'UPDATE "conversations_conversation" c SET "idempotency_key" = NULL '
                    'WHERE c."idempotency_key" IS NOT NULL AND EXISTS ('
                    'SELECT 1 FROM "conversations_conversation" o '
                    'WHERE o."user_id" = c."user_id" AND o."idempotency_key" = c."idempotency_key" '
                    'AND (o."created_at", o."id") < (c."created_at", c."id"))',
                    reverse_sql=migrations.RunSQL.noop,
                ),
                # A build that failed or was interrupted leaves an INVALID index, which IF NOT
                # EXISTS would keep, enforcing nothing: dropped first.
                migrations.RunSQL(
                    "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_index i "
                    "JOIN pg_class c ON c.oid = i.indexrelid "
                    f"WHERE c.relname = '{INDEX}' AND NOT i.indisvalid) THEN "
                    f'EXECUTE \'DROP INDEX "{INDEX}"\'; END IF; END $$',
                    reverse_sql=migrations.RunSQL.noop,
                ),
                migrations.RunSQL(
                    f'CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "{INDEX}" '
                    'ON "conversations_conversation" ("user_id", "idempotency_key") '
                    'WHERE "idempotency_key" IS NOT NULL',
                    reverse_sql=f'DROP INDEX CONCURRENTLY IF EXISTS "{INDEX}"',
                ),
            ],
        ),
    ]
