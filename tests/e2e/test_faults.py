"""Faults survived, with real processes: gunicorn with two workers and two job clusters on one
queue, 16 concurrent clients, a job cluster SIGKILLed in the middle of a summarisation job and
a web worker in the middle of requests (benchmarks/bench_faults.py; docs/deployment.md)."""

import pytest
from django.db import connection

from benchmarks import bench_faults

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("broker", ["orm", "redis"])
def test_killed_processes_lose_nothing_and_leave_nothing_stuck(request, broker):
    redis_url = request.getfixturevalue("redis_url") if broker == "redis" else ""
    report = bench_faults.run(database_name=connection.settings_dict["NAME"], clients=16,
                              conversations=2, messages=24, deadline_seconds=150,
                              redis_url=redis_url)
    print(report.text())
    assert report.problems == [], report.text()
    assert report.killed_cluster_during_model_call
    assert report.killed_web_worker is not None
    assert report.web_workers_after == 2
    # The worker died with requests in flight; their clients retried with the same key.
    assert report.connection_errors > 0
    assert report.seconds_total < 90, report.text()
