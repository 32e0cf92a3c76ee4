"""Helpers for the project's plain SQL (the reads that Django's ORM would make slower)."""

import json
from typing import Any

from django.db import connection


def json_column(value: Any) -> Any:
    """A json or jsonb value as read through Django's connection: psycopg decodes json, while
    Django has jsonb handed over as text (it leaves decoding to JSONField)."""
    return json.loads(value) if isinstance(value, str) else value


def quoted_table(model: Any) -> str:
    """The model's table name, quoted for the project's plain SQL."""
    return connection.ops.quote_name(model._meta.db_table)
