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
                migrations.RunSQL(
                    f'CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS "{INDEX}" '
                    'ON "conversations_conversation" ("user_id", "idempotency_key") '
                    'WHERE "idempotency_key" IS NOT NULL',
                    reverse_sql=f'DROP INDEX CONCURRENTLY IF EXISTS "{INDEX}"',
                ),
            ],
        ),
    ]
