"""App config of the project package: registers its system checks, has each prepared
statement planned once per connection, and has Django's own web server send without delay."""

from typing import Any

from django.apps import AppConfig
from django.core.servers.basehttp import WSGIRequestHandler
from django.db.backends.signals import connection_created


def plan_prepared_statements_once(sender: Any, connection: Any, **kwargs: Any) -> None:
    """A statement prepared on the server (memory_site.core.sql.prepared_cursor) is planned
    once per connection, without its values (a generic plan), instead of at every run:
    planning the project's hand-written statements cost more than running most of them (at
    100 units, context_rows 1.5 ms of planning for 0.2 ms of execution, the search's candidate
    statement 1.9 ms). Their plans do not hang on the values: the SQL fixes each access path
    (the vector lists' exactness included: an exact list ranks inside a MATERIALIZED CTE, the
    sign-bits list orders by a column of the CTE q, which no index can answer, and only the
    HNSW list, a statement text of its own, reads the index), and the scope's size picks the
    statement text, not the plan. Measured on two fills with both modes alternating: the same
    hits at every scope, faster up to 10,000 units, about the same at 50,000 (docs/benchmarks.md,
    sixth session). PostgreSQL's default would plan the first five runs for their values, then
    keep whichever its estimates favour. Set once per new connection, when statements are
    prepared (DB_PREPARED_STATEMENTS)."""
    from memory_site.core.sql import prepares_statements

    if not prepares_statements(connection):
        return
    with connection.cursor() as cursor:
        cursor.execute("SET plan_cache_mode = force_generic_plan")


class MemorySiteConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "memory_site"

    def ready(self) -> None:
        from memory_site import checks  # noqa: F401 - registers the system checks

        connection_created.connect(plan_prepared_statements_once,
                                   dispatch_uid="memory_site.plan_prepared_statements_once")
        # Django's web server (`make run`'s runserver, the tests' live server) sends a
        # response's headers and its body apart; on a kept-alive connection, Nagle's algorithm
        # held the body until the client acknowledged the headers, which it delays by 40 ms:
        # 45 ms a request instead of 3. TCP_NODELAY on its connections, as gunicorn (`make
        # serve`) sets on its own; socketserver's switch for it.
        WSGIRequestHandler.disable_nagle_algorithm = True
