"""Benchmark of the agent side: context-packet and search latency next to a bare DRF GET.

Not a test. It creates a throwaway database on the embedded server (or DATABASE_URL), fills
it with N users × conversations × chunks, measures through the full Django stack with token
authentication, prints p50/p95 and ratios, and drops the database:

    .venv/bin/python benchmarks/bench_context.py --users 200 --conversations 5 --chunks 10

It also measures what the finer retrieval units buy: recall@3 of a detail said in the
unarchived tail of an earlier conversation, with and without message units.
"""

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings_test")

ANIMALS = ["heron", "badger", "otter", "wren", "fox", "hare", "owl", "finch", "stoat", "vole"]
NAMES = ["Pickles", "Juniper", "Biscuit", "Marigold", "Tansy", "Bramble", "Clover", "Nutmeg"]
WARMUP_ROUNDS = 5
TOPICS = ["the garden", "the lake house", "her kitchen", "the church choir", "the war years",
          "the farm", "the seaside", "his workshop", "the wedding", "the old car"]


def _urlpatterns():
    from django.urls import path
    from rest_framework.response import Response
    from rest_framework.views import APIView

    from memory_site.urls import urlpatterns

    class BareApi(APIView):
        """Authenticated, touches nothing: the floor every endpoint pays."""

        def get(self, request):
            return Response({"ok": True})

    return [path("bench/bare", BareApi.as_view()), *urlpatterns]


urlpatterns: list = []


def fill(*, users: int, conversations: int, chunks: int, seed: int = 7) -> list[dict]:
    """N users in families of four; each has `conversations` conversations about the family's
    legacy with `chunks` archived chunks and a short unarchived tail of messages (every
    unit embedded with the current model; the archived messages themselves are not stored)."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from conversations.embedding import model_key
    from conversations.models import Conversation, ConversationChunk, Message
    from facts.models import Legacy, LegacyFact, LegacyMembership
    from memory_site.core.ai import count_tokens, get_embedder

    rng = random.Random(seed)
    embedder = get_embedder()
    key = model_key()
    people = []
    legacy = None
    for u in range(users):
        user = get_user_model().objects.create(username=f"bench-user-{u}")
        if u % 4 == 0:
            legacy = Legacy.objects.create(name=f"Person {u // 4} Remembered", created_by=user)
        LegacyMembership.objects.create(legacy=legacy, user=user,
                                        role="owner" if u % 4 == 0 else "member")
        LegacyFact.objects.create(legacy=legacy, user=user, category="hobby",
                                  content=f"Loved {rng.choice(TOPICS)}.",
                                  visibility="shared" if u % 2 else "private")
        token = Token.objects.create(user=user)
        animal, name = ANIMALS[u % len(ANIMALS)], NAMES[u % len(NAMES)]
        probe = f"Back then we kept a tame {animal} called {name} by the porch."
        convs = []
        chunk_rows, message_rows = [], []
        for c in range(conversations):
            conversation = Conversation.objects.create(user=user, legacy=legacy,
                                                       title=f"Talk {c}", message_count=6)
            convs.append(conversation)
            texts = [
                f"They talked about {rng.choice(TOPICS)} and {rng.choice(TOPICS)} in "
                f"{rng.randint(1940, 1999)}; memories of {rng.choice(TOPICS)}."
                for _ in range(chunks)
            ]
            for k, (text, vector) in enumerate(zip(texts, embedder.embed(texts), strict=True)):
                chunk_rows.append(ConversationChunk(
                    conversation=conversation, user=user, legacy=legacy, content=text,
                    embedding=vector, embedding_model=key, message_range_start=k * 20,
                    message_range_end=k * 20 + 20,
                ))
            tail_start = chunks * 20
            contents = [probe if (c == 0 and i == 2) else
                        f"I remember {rng.choice(TOPICS)}." if i % 2 == 0 else "Tell me more."
                        for i in range(6)]
            # Every message is a unit, embedded as the embedding job would have done.
            for i, (content, vector) in enumerate(zip(contents, embedder.embed(contents),
                                                      strict=True)):
                message_rows.append(Message(
                    conversation=conversation, sequence=tail_start + i,
                    role="user" if i % 2 == 0 else "assistant", content=content,
                    token_count=count_tokens(content), embedding=vector, embedding_model=key,
                ))
        ConversationChunk.objects.bulk_create(chunk_rows)
        Message.objects.bulk_create(message_rows)
        people.append({"user": user, "token": token.key, "legacy": legacy,
                       "conversations": convs, "probe_query": f"{name} the {animal}"})
    return people


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def measure(people: list[dict], *, repeats: int, seed: int = 11) -> dict[str, tuple[float, float]]:
    from django.test import override_settings
    from rest_framework.test import APIClient

    rng = random.Random(seed)
    timings: dict[str, list[float]] = {"bare GET": [], "context packet": [], "search": []}
    with override_settings(ROOT_URLCONF=__name__):
        for round_number in range(WARMUP_ROUNDS + repeats):
            person = rng.choice(people)
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Token {person['token']}")
            conversation = person["conversations"][-1]
            requests = {
                "bare GET": ("/bench/bare", {}),
                "context packet": (f"/api/ai/conversations/{conversation.pk}/context",
                                   {"query": f"memories of {rng.choice(TOPICS)}"}),
                "search": (f"/api/ai/legacies/{person['legacy'].pk}/search",
                           {"q": f"{rng.choice(TOPICS)} in the fifties", "k": 3}),
            }
            # A random order per round, so no endpoint always pays for being first.
            order = list(requests.items())
            rng.shuffle(order)
            for name, (url, params) in order:
                start = time.perf_counter()
                response = client.get(url, params)
                elapsed = (time.perf_counter() - start) * 1000
                if round_number >= WARMUP_ROUNDS:
                    timings[name].append(elapsed)
                if response.status_code != 200:
                    raise RuntimeError(f"{name} answered {response.status_code}: {response.content!r}")
    return {name: _percentiles(samples) for name, samples in timings.items()}


def recall(people: list[dict], *, k: int = 3) -> dict[str, float]:
    """Share of users whose tail detail is in the top k, with and without message units."""
    from conversations.retrieval import search_conversations

    found = {"chunks only": 0, "chunks + messages": 0}
    for person in people:
        for label, include in (("chunks only", False), ("chunks + messages", True)):
            hits = search_conversations(user=person["user"], legacy=person["legacy"],
                                        query=person["probe_query"], k=k,
                                        include_messages=include).hits
            if any("tame" in hit.content for hit in hits):
                found[label] += 1
    return {label: count / len(people) for label, count in found.items()}


def run(*, users: int, conversations: int, chunks: int, repeats: int) -> str:
    """Fill, measure, and return the report (the smoke test calls this on its test database)."""
    from django.db import connection

    from conversations.models import ConversationChunk

    global urlpatterns
    urlpatterns = _urlpatterns()
    started = time.perf_counter()
    people = fill(users=users, conversations=conversations, chunks=chunks)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    fill_seconds = time.perf_counter() - started
    results = measure(people, repeats=repeats)
    quality = recall(people)
    bare_p50, bare_p95 = results["bare GET"]
    lines = [
        f"users={users} conversations/user={conversations} chunks/conversation={chunks} "
        f"(chunks in table: {ConversationChunk.objects.count()}), requests per endpoint={repeats}, "
        f"filled in {fill_seconds:.1f}s",
        f"{'endpoint':<16} {'p50 ms':>8} {'p95 ms':>8} {'p50 ×bare':>10} {'p95 ×bare':>10}",
    ]
    for name, (p50, p95) in results.items():
        lines.append(f"{name:<16} {p50:>8.1f} {p95:>8.1f} {p50 / bare_p50:>10.1f} "
                     f"{p95 / bare_p95:>10.1f}")
    lines.append("recall@3 of a detail in an unarchived tail: " + ", ".join(
        f"{label} {share:.0%}" for label, share in quality.items()
    ))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=40)
    parser.add_argument("--conversations", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=100)
    args = parser.parse_args()
    os.environ.setdefault("MEMORY_TEST_DB", "bench_context")

    import django

    django.setup()
    from django.db import connection

    original_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        print(run(users=args.users, conversations=args.conversations, chunks=args.chunks,
                  repeats=args.repeats))
    finally:
        connection.creation.destroy_test_db(original_name, verbosity=0)


if __name__ == "__main__":
    main()
