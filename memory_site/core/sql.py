"""Helpers for the project's plain SQL (the reads that Django's ORM would make slower)."""

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.db.backends.utils import CursorWrapper


def json_column(value: Any) -> Any:
    """A json or jsonb value as read through Django's connection: psycopg decodes json, while
    Django has jsonb handed over as text (it leaves decoding to JSONField)."""
    return json.loads(value) if isinstance(value, str) else value


def quoted_table(model: Any) -> str:
    """The model's table name, quoted for the project's plain SQL."""
    return connection.ops.quote_name(model._meta.db_table)


@contextmanager
def prepared_cursor() -> Iterator[CursorWrapper]:
    """A cursor of the default connection that binds its parameters on the server (Django's
    cursors bind them in the client: the values are written into the SQL). psycopg then
    prepares a statement run again on the connection (from its prepare_threshold-th run, 5),
    and PostgreSQL parses it once per connection instead of at every run: 1.5 ms for the
    search's candidate statement. For the project's large hand-written statements, each run
    with the same SQL text and other values; one statement per execute. Django's wrapper
    (query logging, execute_wrapper) is kept."""
    from django.db.backends.postgresql.base import (
        TIMESTAMPTZ_OID,
        Format,
        ServerBindingCursor,
        register_tzloader,
    )

    connection.ensure_connection()
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        raw = ServerBindingCursor(connection.connection)
    # As Django's own cursors: timestamps read in the connection's time zone.
    if connection.connection.adapters.get_loader(
            TIMESTAMPTZ_OID, Format.TEXT).timezone != connection.timezone:
        register_tzloader(connection.timezone, raw)
    cursor = (connection.make_debug_cursor(raw) if connection.queries_logged
              else connection.make_cursor(raw))
    try:
        yield cursor
    finally:
        cursor.close()
