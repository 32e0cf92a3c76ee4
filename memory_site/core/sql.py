"""Helpers for the project's plain SQL (the reads that Django's ORM would make slower)."""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.db.backends.postgresql.base import (
    TIMESTAMPTZ_OID,
    CursorDebugWrapper,
    Format,
    ServerBindingCursor,
    register_tzloader,
)
from django.db.backends.utils import CursorWrapper


def json_column(value: Any) -> Any:
    """A json or jsonb value as read through Django's connection: psycopg decodes json, while
    Django has jsonb handed over as text (it leaves decoding to JSONField)."""
    return json.loads(value) if isinstance(value, str) else value


def quoted_table(model: Any) -> str:
    """The model's table name, quoted for the project's plain SQL."""
    return connection.ops.quote_name(model._meta.db_table)


class _PreparingCursor(ServerBindingCursor):
    """Prepares at the first run, not after psycopg's prepare_threshold runs: the connection
    counts every statement run, Django's too (each with its values written in, so each a new
    text), in an LRU of prepared_max (100) entries, and a statement run once per request would
    rarely reach the threshold. Nothing is prepared when prepare_threshold is None."""

    def execute(self, query, params=None, *, prepare=None, binary=None):  # noqa: ANN001, ANN202
        return super().execute(query, params, prepare=True, binary=binary)


class _PreparedDebugWrapper(CursorDebugWrapper):
    """Logs a statement as written, with its parameters beside it: a prepared run sends no
    text with the values in (Django's last_executed_query would log None)."""

    def execute(self, sql, params=None):  # noqa: ANN001, ANN202
        with self.debug_sql(sql, params):
            return CursorWrapper.execute(self, sql, params)


@contextmanager
def prepared_cursor() -> Iterator[CursorWrapper]:
    """A cursor of the default connection that binds its parameters on the server (Django's
    cursors write the values into the SQL) and has psycopg prepare each statement at its first
    run on the connection: PostgreSQL then parses it once per connection instead of at every
    run (1.5 ms for the search's candidate statement), and plans it once (the connection's
    plan_cache_mode, memory_site.apps: a generic plan). For the project's large
    hand-written statements, each run with the same SQL text and other values; one statement
    per execute. Nothing is prepared with DB_PREPARED_STATEMENTS off (psycopg's
    prepare_threshold None). Django's wrapper (query logging, execute_wrapper) is kept."""
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        raw = _PreparingCursor(connection.connection)
    # As Django's own cursors: timestamps read in the connection's time zone.
    if connection.connection.adapters.get_loader(
            TIMESTAMPTZ_OID, Format.TEXT).timezone != connection.timezone:
        register_tzloader(connection.timezone, raw)
    cursor = (_PreparedDebugWrapper(raw, connection) if connection.queries_logged
              else connection.make_cursor(raw))
    try:
        yield cursor
    finally:
        cursor.close()
