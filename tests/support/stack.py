"""The production stack as real processes, for tests and benchmarks: redis-server, gunicorn and
django-q2 clusters on one database of the embedded server (a test's database, usually).

    with RedisServer() as redis:                       # Debian's redis-server on a free port
        env = stack_env(database_name, REDIS_URL=redis.url, Q_BROKER="redis")
        web = Gunicorn(env, workers=2).start()         # waits for /healthz
        jobs = Cluster(env).start()
        ...
        jobs.kill()                                    # SIGKILL, the whole cluster
        web.kill_worker()                              # SIGKILL one gunicorn worker
        web.stop(); jobs.stop()
"""

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def stack_env(database_name: str, **overrides: str) -> dict[str, str]:
    """The environment of a production process on `database_name`: DEBUG off, a random
    SECRET_KEY shared by all of them, jobs on the broker (not in-process)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "MEMORY_DATABASE_NAME": database_name,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "Q_SYNC": "false",
        "Q_POLL": "0.2",
        "LOG_LEVEL": "WARNING",
    }
    env.update(overrides)
    return env


class _Process:
    """A child in a session of its own, its output in a temporary log file."""

    name = "process"

    def __init__(self, env: dict[str, str]):
        self.env = env
        self.process: subprocess.Popen | None = None
        # The child's output, read back by log() when something fails; stop() removes it.
        self._log = tempfile.NamedTemporaryFile(  # noqa: SIM115
            prefix=f"{self.name}-", suffix=".log", delete=False
        )

    def command(self) -> list[str]:
        raise NotImplementedError

    def _spawn(self) -> None:
        self.process = subprocess.Popen(
            self.command(), cwd=ROOT, env=self.env, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self, last: int = 3000) -> str:
        path = Path(self._log.name)
        return path.read_text(errors="replace")[-last:] if path.exists() else ""

    def kill(self) -> None:
        """SIGKILL to the whole process group: the machine it ran on died."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM and wait (SIGKILL after `timeout`), then remove the log."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):  # whatever it left behind
                os.killpg(self.process.pid, signal.SIGKILL)
        self._log.close()
        Path(self._log.name).unlink(missing_ok=True)


class Gunicorn(_Process):
    """gunicorn with `workers` gthread workers on 127.0.0.1 at a free port, as `make serve`."""

    name = "gunicorn"

    def __init__(self, env: dict[str, str], *, workers: int = 2, threads: int = 4):
        super().__init__(env)
        self.workers = workers
        self.threads = threads
        self.port = free_port()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "gunicorn", "memory_site.wsgi:application",
                "--bind", f"127.0.0.1:{self.port}", "--workers", str(self.workers),
                "--threads", str(self.threads), "--worker-class", "gthread",
                "--graceful-timeout", "5", "--timeout", "60", "--no-control-socket"]

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=5) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def start(self, timeout: float = 60) -> "Gunicorn":
        self._spawn()
        if not wait_until(lambda: not self.alive() or self._healthy(), timeout, 0.2) \
                or not self.alive():
            self.stop()
            raise RuntimeError(f"gunicorn did not start:\n{self.log()}")
        return self

    def worker_pids(self) -> list[int]:
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children")
        try:
            return [int(pid) for pid in children.read_text().split()]
        except FileNotFoundError:
            return []

    def kill_worker(self) -> int:
        """SIGKILL one worker (the master starts a new one); returns its pid."""
        pid = self.worker_pids()[0]
        os.kill(pid, signal.SIGKILL)
        return pid


class Cluster(_Process):
    """`manage.py qcluster`: one django-q2 cluster (Q_WORKERS workers) on the env's broker."""

    name = "qcluster"

    def command(self) -> list[str]:
        return [sys.executable, "manage.py", "qcluster"]

    def start(self) -> "Cluster":
        self._spawn()
        time.sleep(0.5)
        if not self.alive():
            raise RuntimeError(f"qcluster did not start:\n{self.log()}")
        return self


class RedisServer:
    """Debian's redis-server on 127.0.0.1 at a free port, nothing saved to disk."""

    def __init__(self):
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self._dir = tempfile.mkdtemp(prefix="redis-")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _pong(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def start(self) -> "RedisServer":
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError(
                "redis-server is missing: `make redis` installs Debian's package "
                "(apt-get install redis-server)"
            )
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self._dir, "--daemonize", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        if not wait_until(self._pong, 10):
            self.stop()
            raise RuntimeError("redis-server did not answer PING")
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
