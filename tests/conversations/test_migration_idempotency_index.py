"""Migration conversations/0011 (the unique index of conversation Idempotency-Keys, built
CONCURRENTLY) on a database that the code wrote to before the index: keys stored twice keep
the first conversation's, and an INVALID index left by an interrupted build is built again,
rather than kept by IF NOT EXISTS and enforcing nothing (found by a review)."""

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection

from tests.factories import ConversationFactory

INDEX = "conversation_idempotency_key_unique"


def _index_valid() -> bool | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT i.indisvalid FROM pg_index i JOIN pg_class c "
                       "ON c.oid = i.indexrelid WHERE c.relname = %s", [INDEX])
        row = cursor.fetchone()
    return None if row is None else row[0]


@pytest.mark.django_db(transaction=True)
def test_0011_keeps_the_first_of_keys_stored_twice_and_rebuilds_an_invalid_index(family):
    # Made with today's models, before the schema goes back (a later migration's column
    # would be missing from the table the models write to).
    first = ConversationFactory(user=family.owner, legacy=family.legacy)
    second = ConversationFactory(user=family.owner, legacy=family.legacy)
    call_command("migrate", "conversations", "0010", verbosity=0)
    try:
        assert _index_valid() is None
        with connection.cursor() as cursor:
            cursor.execute('UPDATE "conversations_conversation" SET "idempotency_key" = %s, '
                           "created_at = created_at + (CASE WHEN id = %s THEN interval '1 second' "
                           "ELSE interval '0' END) WHERE id = ANY(%s)",
                           ["retry-1", second.pk, [first.pk, second.pk]])
            # What an interrupted CREATE INDEX CONCURRENTLY leaves: the index, marked invalid.
            cursor.execute(f'CREATE INDEX "{INDEX}" ON "conversations_conversation" ("id")')
            cursor.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass",
                           [INDEX])
        assert _index_valid() is False
    finally:
        call_command("migrate", "conversations", verbosity=0)
    assert _index_valid() is True
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.idempotency_key, second.idempotency_key) == ("retry-1", None)
    with pytest.raises(IntegrityError), connection.cursor() as cursor:
        cursor.execute('UPDATE "conversations_conversation" SET "idempotency_key" = %s '
                       "WHERE id = %s", ["retry-1", second.pk])
