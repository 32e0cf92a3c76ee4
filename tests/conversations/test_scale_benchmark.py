"""benchmarks/bench_scale.py runs on a small size: its fill and its measurement, every scope
requested side by side in each round (the numbers are not checked: not a test of speed)."""

import random

import pytest
from rest_framework.test import APIClient

from benchmarks import bench_scale

pytestmark = pytest.mark.django_db


def test_each_round_requests_every_scopes_three_endpoints_in_a_shuffled_order(monkeypatch):
    rng = random.Random(1)
    scopes = [bench_scale.fill_scope(units, person, rng)
              for units, person in zip((30, 80), bench_scale._people(2, "bench"), strict=True)]
    monkeypatch.setattr(bench_scale, "urlpatterns", bench_scale._urlpatterns())
    requests: list[tuple[str, str]] = []
    real_get = APIClient.get

    def get(self, path, data=None, **extra):  # noqa: ANN001, ANN202
        endpoint = "bare" if path == "/bench/bare" else path.split("/")[3]
        requests.append((self._credentials["HTTP_AUTHORIZATION"], endpoint))
        return real_get(self, path, data, **extra)

    monkeypatch.setattr(APIClient, "get", get)
    results = bench_scale.measure(scopes, repeats=3, budget_seconds=60)

    per_round = 3 * len(scopes)
    assert len(requests) == (bench_scale.WARMUP_ROUNDS + 3) * per_round
    rounds = [requests[i:i + per_round] for i in range(0, len(requests), per_round)]
    every = {(f"Token {scope['token']}", endpoint) for scope in scopes
             for endpoint in ("bare", "legacies", "conversations")}
    assert all(sorted(round_) == sorted(every) for round_ in rounds)
    assert len({tuple(round_) for round_ in rounds}) > 1  # shuffled, not one fixed order
    assert [result["rounds"] for result in results] == [3, 3]
    for result in results:
        for name in ("bare GET", "search", "context"):
            p50, p95 = result[name]
            assert 0 < p50 <= p95
