"""The benchmark runs on a small size (its numbers are not checked; it is not a test of speed)."""

import pytest

from benchmarks import bench_context

pytestmark = pytest.mark.django_db


def test_the_benchmark_runs_on_a_small_size():
    report = bench_context.run(users=4, conversations=2, chunks=2, repeats=3)

    assert "users=4 conversations/user=2 chunks/conversation=2 (chunks in table: 16)" in report
    for name in ("bare GET", "context packet", "search"):
        assert f"\n{name} " in report
    assert "recall@3 of a detail in an unarchived tail: chunks only 0%, chunks + messages 100%" \
        in report
