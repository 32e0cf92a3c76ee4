"""Every PostgreSQL advisory-lock namespace of the project, in one place, so that no two
kinds of lock share one (pg_advisory_lock(namespace, key) with a 32-bit key per row)."""

from enum import IntEnum, unique


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
