"""bin/run (what `make run` starts) stops the web server and the job worker together on Ctrl-C
or SIGTERM, and kills a worker that does not stop; a fake python stands in for manage.py."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[2] / "bin" / "run"

# Like django-q2's cluster, the fake qcluster has a child of its own that it stops on SIGTERM;
# a stubborn one ignores SIGTERM, as a cluster waiting for a long job does.
FAKE_PYTHON = """#!/usr/bin/env bash
echo $$ >> "{pids}"
echo "$* DEBUG=${{DEBUG:-unset}}" >> "{pids}.args"
echo "$2 DB_CONN_MAX_AGE=${{DB_CONN_MAX_AGE:-unset}}" >> "{pids}.conn"
case "$2" in
  qcluster)
    sleep 300 & child=$!
    echo $child >> "{pids}"
    if [ "{stubborn}" = yes ]; then trap '' TERM; else trap 'kill $child; exit 0' TERM; fi
    while :; do wait; done ;;
  runserver|gunicorn)
    exec sleep 300 ;;
esac
"""


def _start(tmp_path: Path, *, stubborn: bool, mode: str = "") -> tuple[subprocess.Popen, Path]:
    pids = tmp_path / "pids"
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTHON.format(pids=pids, stubborn="yes" if stubborn else "no"))
    fake.chmod(0o755)
    run = subprocess.Popen(
        [str(RUN), *([mode] if mode else [])],
        env={**{k: v for k, v in os.environ.items() if k != "DEBUG"}, "PY": str(fake),
             "PORT": "8059", "WEB_CONCURRENCY": "3"},
        start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # A test run started in the background of a shell (`make test &`) inherits SIGINT
        # ignored, and bash cannot trap a signal ignored on entry: give the script the
        # default disposition a terminal's Ctrl-C meets.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if pids.exists() and len(pids.read_text().split()) == 3:
            return run, pids
        time.sleep(0.05)
    run.kill()
    pytest.fail("bin/run did not start the fake worker and web server")


def _alive(pids: Path) -> list[int]:
    alive = []
    for pid in map(int, pids.read_text().split()):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def _wait_stopped(run: subprocess.Popen, pids: Path, seconds: float) -> float:
    started = time.monotonic()
    run.wait(timeout=seconds)
    while _alive(pids) and time.monotonic() - started < seconds:
        time.sleep(0.05)
    return time.monotonic() - started


@pytest.mark.parametrize(("sig", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_to_the_process_group_stops_the_web_server_and_the_worker(
    tmp_path, sig, exit_code
):
    run, pids = _start(tmp_path, stubborn=False)
    os.killpg(run.pid, sig)  # what Ctrl-C in a terminal does
    took = _wait_stopped(run, pids, 5)
    assert _alive(pids) == []
    assert took < 3
    assert run.returncode == exit_code
    assert "killing" not in run.stderr.read()


def test_sigterm_to_the_script_alone_stops_both(tmp_path):
    run, pids = _start(tmp_path, stubborn=False)
    run.terminate()  # what make does with its recipe when it gets SIGTERM
    _wait_stopped(run, pids, 5)
    assert _alive(pids) == []
    assert run.returncode == 143


def test_a_worker_that_does_not_stop_is_killed_after_ten_seconds(tmp_path):
    run, pids = _start(tmp_path, stubborn=True)
    run.terminate()
    took = _wait_stopped(run, pids, 15)
    assert _alive(pids) == []
    assert 9.5 < took < 12
    assert run.stderr.read() == "the job worker did not stop within 10 s: killing it\n"


def test_serve_runs_gunicorn_with_the_worker_and_stops_both(tmp_path):
    run, pids = _start(tmp_path, stubborn=False, mode="serve")
    os.killpg(run.pid, signal.SIGINT)
    _wait_stopped(run, pids, 5)
    assert _alive(pids) == []
    assert run.returncode == 130
    args = sorted(Path(f"{pids}.args").read_text().splitlines())
    assert args == [
        "-m gunicorn memory_site.wsgi:application --bind 127.0.0.1:8059 --workers 3 --threads 4 "
        "--worker-class gthread --timeout 120 --graceful-timeout 8 --forwarded-allow-ips "
        "127.0.0.1 --access-logfile - --error-logfile - --no-control-socket DEBUG=unset",
        "manage.py qcluster DEBUG=unset",
    ]


def test_run_is_development_with_debug_on(tmp_path):
    run, pids = _start(tmp_path, stubborn=False)
    run.terminate()
    _wait_stopped(run, pids, 5)
    assert sorted(Path(f"{pids}.args").read_text().splitlines()) == [
        "manage.py qcluster DEBUG=true",
        "manage.py runserver --noreload 127.0.0.1:8059 DEBUG=true",
    ]
    # runserver's request threads do not outlive their request, nor do their connections (a
    # tester's burst of 8 clients used up PostgreSQL's); the worker keeps its own.
    assert sorted(Path(f"{pids}.conn").read_text().splitlines()) == [
        "qcluster DB_CONN_MAX_AGE=unset", "runserver DB_CONN_MAX_AGE=0",
    ]
