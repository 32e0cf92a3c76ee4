"""Search every text, varchar and JSON column of every table of the test database for a string,
decoding what is stored encoded: Django sessions, django-q2's pickled job rows and signed queue
payloads, and the database cache's pickled values."""

import base64
import json
import pickle
from collections import Counter

from django.contrib.sessions.backends.db import SessionStore
from django.db import connection
from django_q.models import OrmQ, Task
from django_q.signing import SignedPackage
from psycopg import sql

TEXT_TYPES = ("text", "character varying", "character", "json", "jsonb")

# Columns whose text is an encoding of what it holds: searched raw and decoded.
ENCODED = {
    ("django_session", "session_data"),
    ("django_q_task", "args"),
    ("django_q_task", "kwargs"),
    ("django_q_task", "result"),
    ("django_q_ormq", "payload"),
    ("memory_site_cache", "value"),
}


def text_columns() -> list[tuple[str, str]]:
    """(table, column) of every text, varchar and JSON column of every table (views left out)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.table_name, c.column_name FROM information_schema.columns c "
            "JOIN information_schema.tables t "
            "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
            "WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' "
            "AND c.data_type = ANY(%s) ORDER BY 1, 2",
            [list(TEXT_TYPES)],
        )
        return cursor.fetchall()


def _raw_hits(needle: str) -> Counter:
    hits: Counter = Counter()
    with connection.cursor() as cursor:
        for table, column in text_columns():
            cursor.execute(
                sql.SQL("SELECT count(*) FROM {} WHERE {}::text LIKE %s").format(
                    sql.Identifier(table), sql.Identifier(column)
                ),
                [f"%{needle}%"],
            )
            (count,) = cursor.fetchone()
            if count:
                hits[(table, column)] += count
    return hits


def _text(value: object) -> str:
    return json.dumps(value, default=repr, ensure_ascii=False)


def _decoded_rows() -> list[tuple[tuple[str, str], str]]:
    rows = []
    with connection.cursor() as cursor:
        cursor.execute("SELECT session_data FROM django_session")
        for (data,) in cursor.fetchall():
            rows.append((("django_session", "session_data"), _text(SessionStore().decode(data))))
        cursor.execute("SELECT value FROM memory_site_cache")
        for (value,) in cursor.fetchall():
            decoded = pickle.loads(base64.b64decode(value.encode()))
            rows.append((("memory_site_cache", "value"), _text(decoded)))
    for task in Task.objects.all():
        for column in ("args", "kwargs", "result"):
            rows.append((("django_q_task", column), _text(getattr(task, column))))
    for queued in OrmQ.objects.all():
        rows.append((("django_q_ormq", "payload"), _text(SignedPackage.loads(queued.payload))))
    return rows


def hits(needle: str) -> Counter:
    """How many rows hold `needle`, per (table, column): raw, and decoded for the ENCODED ones
    (marked `(decoded)`)."""
    found = _raw_hits(needle)
    for (table, column), text in _decoded_rows():
        if needle in text:
            found[(table, f"{column} (decoded)")] += 1
    return found
