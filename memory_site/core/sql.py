"""Helpers for the project's plain SQL (the reads that Django's ORM would make slower)."""

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import connection
from django.db.backends.postgresql.base import (
    TIMESTAMPTZ_OID,
    CursorDebugWrapper,
    Format,
    ServerBindingCursor,
    register_tzloader,
)
from django.db.backends.utils import CursorWrapper
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators
from django.db.models.sql.compiler import SQLCompiler

from memory_site.core.errors import NotFound


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


def prepares_statements(wrapper: Any) -> bool:
    """Whether the connection (a DatabaseWrapper) prepares statements, and so keeps its session
    for itself (DB_PREPARED_STATEMENTS; off behind a pooler in transaction mode): what is set
    for its session when it opens (memory_site.apps, conversations.retrieval) holds only then."""
    return wrapper.settings_dict.get("OPTIONS", {}).get("prepare_threshold") is not None


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


@dataclass(frozen=True)
class _CompiledRead:
    sql: str
    positions: list[int]  # each parameter's argument
    compiler: SQLCompiler
    model: type[Model]
    attnames: list[str]  # the model's columns, in the select list from `start` to `end`
    start: int
    end: int
    populators: list  # select_related's, stateless: made once


class PreparedRead:
    """A read of model instances (select_related and annotations included) that Django's ORM
    writes once per process and that runs as a statement prepared on the server
    (prepared_cursor): building and compiling a queryset cost more than running it (a
    conversation with its legacy: 1.2 ms of compiling, 0.4 ms of running). The queryset stays
    the one source of its rules.

    `build(*args)` makes the queryset; `samples()` gives arguments whose values each appear as
    a parameter of the compiled SQL and nowhere else (sentinels), so that each parameter of a
    run is the argument at the same place. A queryset whose parameters are not all samples is
    refused at its first run (ImproperlyConfigured)."""

    def __init__(self, build: Callable[..., QuerySet], samples: Callable[[], tuple]) -> None:
        self._build = build
        self._samples = samples
        self._compiled: _CompiledRead | None = None

    def _compile(self) -> _CompiledRead:
        samples = self._samples()
        queryset = self._build(*samples)
        compiler = queryset.query.get_compiler(using=queryset.db)
        sql, params = compiler.as_sql()
        keys = [_param_key(sample) for sample in samples]
        try:
            positions = [keys.index(_param_key(param)) for param in params]
        except ValueError:
            raise ImproperlyConfigured(
                f"PreparedRead: a parameter of {sql!r} is not one of the sample arguments"
            ) from None
        klass_info = compiler.klass_info
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        return _CompiledRead(
            sql=sql, positions=positions, compiler=compiler, model=klass_info["model"],
            attnames=[column[0].target.attname for column in compiler.select[start:end]],
            start=start, end=end,
            populators=get_related_populators(klass_info, compiler.select, queryset.db),
        )

    def __call__(self, *args: Any) -> list[Model]:
        if self._compiled is None:
            self._compiled = self._compile()
        read = self._compiled
        with prepared_cursor() as cursor:
            cursor.execute(read.sql, [_param_value(args[i]) for i in read.positions])
            rows = cursor.fetchall()
        objects = []
        for row in read.compiler.results_iter([rows]):
            obj = read.model.from_db(connection.alias, read.attnames, row[read.start:read.end])
            for populator in read.populators:
                populator.populate(row, obj)
            for name, position in read.compiler.annotation_col_map.items():
                setattr(obj, name, row[position])
            objects.append(obj)
        return objects

    def one_for(self, user: Any, object_id: object) -> Model:
        """The one row of a read by (user, id) (user_and_id_samples); NotFound, as if it did not
        exist, for an anonymous user, an id that is not one of the model's, and no row."""
        if not user.is_authenticated:
            raise NotFound()
        if self._compiled is None:
            self._compiled = self._compile()
        try:
            pk = self._compiled.model._meta.pk.to_python(object_id)
        except ValidationError:
            raise NotFound() from None
        found = self(user, pk)
        if not found:
            raise NotFound()
        return found[0]


def user_and_id_samples() -> tuple[Model, UUID]:
    """The sample arguments of a PreparedRead by (user, id): an unsaved user and an id, each a
    value that no queryset writes in as a constant of its own."""
    from django.contrib.auth import get_user_model

    return get_user_model()(pk=-987_654_321), UUID("5e471ee1-0000-4000-8000-5e471ee10001")


def _param_key(value: Any) -> Any:
    return getattr(value, "pk", value)


def _param_value(value: Any) -> Any:
    """A model instance's parameter is its primary key, as the ORM writes it."""
    return value.pk if isinstance(value, Model) else value
