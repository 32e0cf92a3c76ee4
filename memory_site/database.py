"""Database configuration: DATABASE_URL when set, otherwise an embedded PostgreSQL 16 + pgvector.

The embedded server comes from the `pgserver` package. Every process that loads the
settings (web server, qcluster, tests, management commands) joins the same server
through its unix socket in the data folder; the server keeps running between
commands so that the next process starts at once.
"""

import logging
from pathlib import Path

import dj_database_url

logger = logging.getLogger(__name__)

EMBEDDED_DATABASE_NAME = "legacy_memory"


def embedded_database_config(data_dir: Path) -> dict:
    """Start (or join) the embedded server and return a Django DATABASES entry for it."""
    import warnings

    import psycopg

    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset; pgserver then uses /tmp, which is fine.
        warnings.simplefilter("ignore")
        import pgserver

    data_dir.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(data_dir / "pg", cleanup_mode=None)
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


def database_config(*, database_url: str, data_dir: Path, conn_max_age: int) -> dict:
    if database_url:
        config = dj_database_url.parse(database_url, conn_max_age=conn_max_age)
        if config["ENGINE"] != "django.db.backends.postgresql":
            raise ValueError("DATABASE_URL must point at PostgreSQL (with pgvector)")
        return config
    config = embedded_database_config(data_dir)
    config["CONN_MAX_AGE"] = conn_max_age
    return config


def stop_embedded_server(data_dir: Path) -> bool:
    """Stop the embedded server of `data_dir` if it runs; True when one was stopped."""
    import os
    import subprocess
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pgserver import _commands

    pgdata = data_dir / "pg"
    if not (pgdata / "postmaster.pid").exists():
        return False
    command = [str(_commands.POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(pgdata), "-w", "stop"]
    if os.geteuid() == 0:
        # As root, pgserver runs the server as its own system user, and pg_ctl must be that user.
        command = ["su", "pgserver", "-s", "/bin/sh", "-c", " ".join(command)]
    subprocess.run(command, check=True, capture_output=True)
    return True
