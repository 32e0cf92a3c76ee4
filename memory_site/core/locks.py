"""Every PostgreSQL advisory-lock namespace of the project, in one place, so that no two
kinds of lock share one (pg_advisory_lock(namespace, key) with a 32-bit key per row)."""

from enum import IntEnum, unique
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection

from memory_site.core.sql import quoted_table


@unique
class LockNamespace(IntEnum):
    # conversations.services.summarization: one worker at a time archives a conversation
    # (session-level, pg_try_advisory_lock).
    ARCHIVE = 30_000
    # facts.services: one writer at a time of one author's facts about one legacy
    # (transaction-level, pg_advisory_xact_lock).
    FACT_AUTHOR = 30_001
    # conversations.services.turn: one request at a time runs the turn of a user message
    # (session-level, pg_try_advisory_lock).
    TURN = 30_002
    # facts.services: one writer at a time records the conflicts of a new fact with the
    # other members' facts about one legacy (transaction-level, pg_advisory_xact_lock).
    FACT_CONFLICTS = 30_003


def hold_row(model: Any, pk: object) -> bool:
    """Inside a transaction: hold one row shared (FOR KEY SHARE, what an insert that points at
    it takes through its foreign key) until the transaction ends, so that it cannot be deleted
    meanwhile; False when there is no such row (deleted already, or being deleted: the lock
    waits for that delete and then finds nothing)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {quoted_table(model)} "
            f"WHERE {connection.ops.quote_name(model._meta.pk.column)} = %s FOR KEY SHARE", [pk])
        return cursor.fetchone() is not None


def hold_user(user_id: object) -> None:
    """Inside a transaction, as its first lock: hold the account's row shared (hold_row) until
    the transaction ends. Erasing the user's data (memory_site.privacy.services) locks that row
    first and everything of theirs after it; a write that takes the row first too waits for an
    erase under way, or makes the erase wait for it, and the two never deadlock. Taken only
    later, by the write's first insert that names the user, it came after the write's other
    locks (a legacy, a conversation, an author's facts) that the erase was waiting for."""
    hold_row(get_user_model(), user_id)
