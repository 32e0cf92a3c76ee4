"""The import benchmark runs on a small size (its numbers are not checked; it is not a test of
speed)."""

import pytest

from benchmarks import bench_import

pytestmark = pytest.mark.django_db


def test_the_benchmark_runs_on_a_small_size(settings):
    settings.IMPORT_MAX_BATCH = 4

    report = bench_import.run(messages=10)

    assert report.startswith("messages=10 stored=10\nimport: ")
    assert "Imported 1 conversations and 10 messages;" in report
    assert "skipped 1 conversations and 10 messages imported before." in report
