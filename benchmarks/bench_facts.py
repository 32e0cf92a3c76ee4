"""Benchmark of a family with many facts: the context packet, a fact added by hand and the
conflicts list, next to a bare DRF GET, as the family's facts grow.

Not a test. It creates a throwaway database on the embedded server (or DATABASE_URL), and for
each size makes a legacy of two members whose facts are that many (half the caller's, half a
relative's shared ones; one in ten of the relative's states a birth year the caller's first
fact contradicts, a recorded conflict each), measures through the full Django stack with
token authentication (in process), prints p50/p95 and their ratios to the bare GET of the same
run, and drops the database:

    .venv/bin/python benchmarks/bench_facts.py --facts 100,1000,10000 --repeats 20

A packet over budget used to count the whole prompt again after every fact it cut (quadratic
in the facts), a conflict was written by a get_or_create each under the legacy's lock, and the
packet's `disputed` marks read every conflict once a fact: docs/benchmarks.md, "Facts".
"""

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings_test")
os.environ.setdefault("LOG_LEVEL", "WARNING")
# No rate limits: one caller makes hundreds of requests a minute here.
for _name in ("THROTTLE_RATE_USER", "THROTTLE_RATE_TURN", "THROTTLE_RATE_ANON"):
    os.environ.setdefault(_name, "")

from benchmarks.bench_context import _percentiles, _urlpatterns  # noqa: E402 - after sys.path

THINGS = ["harmonica", "garden", "lake house", "kitchen", "choir", "farm", "workshop", "car"]
WARMUP_ROUNDS = 3


urlpatterns: list = []


def fill(size: int, *, seed: int = 5) -> dict:
    """A legacy whose two members hold `size` facts between them, with their conflicts, and a
    conversation of the caller's with a few messages."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from conversations.models import Conversation
    from conversations.services import message_append
    from facts.models import FactConflict, Legacy, LegacyFact, LegacyMembership

    rng = random.Random(seed)
    users = get_user_model().objects
    caller = users.create(username=f"caller-{size}")
    relative = users.create(username=f"relative-{size}")
    legacy = Legacy.objects.create(name="Rose Whitfield", created_by=caller)
    LegacyMembership.objects.create(legacy=legacy, user=caller, role="owner")
    LegacyMembership.objects.create(legacy=legacy, user=relative, role="member")
    mine = LegacyFact.objects.create(legacy=legacy, user=caller, category="milestone",
                                     content="Rose was born in 1931.", visibility="shared")
    rows = []
    for n in range(size - 1):
        author = caller if n % 2 else relative
        content = (f"Rose was born in {1800 + n}." if author is relative and n % 10 == 0 else
                   f"Rose loved the {rng.choice(THINGS)} and kept note {n} of it in "
                   f"{1900 + n % 100}.")
        rows.append(LegacyFact(legacy=legacy, user=author, category="other", content=content,
                               visibility="shared"))
    facts = LegacyFact.objects.bulk_create(rows)
    FactConflict.objects.bulk_create(
        FactConflict(legacy=legacy, fact_a_id=min(mine.pk, fact.pk),
                     fact_b_id=max(mine.pk, fact.pk), attribute="born_year")
        for fact in facts if fact.content.startswith("Rose was born"))
    conversation = Conversation.objects.create(user=caller, legacy=legacy, title="Today")
    for i in range(6):
        message_append(conversation=conversation, role="user" if i % 2 == 0 else "assistant",
                       content=f"Tell me about the {rng.choice(THINGS)}.")
    return {"size": size, "token": Token.objects.create(user=caller).key,
            "legacy": str(legacy.pk), "conversation": str(conversation.pk)}


def measure(scope: dict, *, repeats: int) -> dict[str, tuple[float, float]]:
    from django.test import override_settings
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {scope['token']}")
    calls = {
        "bare GET": lambda n: client.get("/bench/bare"),
        "context": lambda n: client.get(f"/api/ai/conversations/{scope['conversation']}/context",
                                        {"query": "the harmonica"}),
        "fact added": lambda n: client.post(
            f"/api/ai/legacies/{scope['legacy']}/facts",
            {"category": "milestone", "content": f"Rose was born in {1000 + n}, story {n}.",
             "visibility": "shared"}, format="json"),
        "conflicts page": lambda n: client.get(
            f"/api/ai/legacies/{scope['legacy']}/fact-conflicts"),
    }
    timings: dict[str, list[float]] = {name: [] for name in calls}
    with override_settings(ROOT_URLCONF=__name__):
        for n in range(WARMUP_ROUNDS + repeats):
            for name, call in calls.items():
                started = time.perf_counter()
                response = call(n)
                elapsed = (time.perf_counter() - started) * 1000
                assert response.status_code in (200, 201), (name, response.content[:200])
                if n >= WARMUP_ROUNDS:
                    timings[name].append(elapsed)
    return {name: _percentiles(samples) for name, samples in timings.items()}


def run(sizes: list[int], repeats: int) -> str:
    global urlpatterns
    urlpatterns = _urlpatterns()
    from django.db import connection

    lines = [f"{'facts':>8} {'bare p50':>9} " + " ".join(
        f"{name + ' p50/p95 ms':>26} {'×bare':>6}" for name in ("context", "fact added",
                                                                 "conflicts page"))]
    for size in sizes:
        scope = fill(size)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        result = measure(scope, repeats=repeats)
        bare = result["bare GET"][0]
        lines.append(f"{size:>8,} {bare:>9.1f} " + " ".join(
            f"{result[name][0]:>12.1f} / {result[name][1]:>11.1f} {result[name][0] / bare:>5.1f}×"
            for name in ("context", "fact added", "conflicts page")))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facts", default="100,1000,10000",
                        help="comma-separated family sizes in facts")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    os.environ.setdefault("MEMORY_TEST_DB", "bench_facts")

    import django

    django.setup()
    from django.db import connection

    original_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        print(run([int(size) for size in args.facts.split(",")], args.repeats))
    finally:
        connection.creation.destroy_test_db(original_name, verbosity=0)


if __name__ == "__main__":
    main()
