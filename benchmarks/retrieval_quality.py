"""Quality of retrieval over earlier conversations, on a labelled set (default
tests/data/retrieval_dev.json; the long sets tests/data/retrieval_long_dev.json, tuned on, and
retrieval_long_blind.json, reported on only, with --data).

Not a test. It creates a throwaway database, loads every session of the set through the real
services (each session a conversation: messages appended, closed, archived and embedded by the
jobs with the offline providers, sessions a week apart), asks every question through
conversations.retrieval.search_conversations (what GET …/search and the context packet use)
and prints, per variant of the settings, at top 5 and top 10:

- words: questions whose answer words are all in the text the hits return (what the agent
  would actually read);
- range: questions whose evidence turn lies inside the message range of a hit;
- tokens: the mean tiktoken count of the hits' text.

    .venv/bin/python benchmarks/retrieval_quality.py [--data FILE] [--variants baseline,window-0-0 …]

With --pad-units N, each legacy gets newer sessions after its own, borrowed from the set's other
legacies (and from retrieval_dev.json), until they hold N messages: its own sessions, where the
evidence is, are then older than the newest N units, beyond the text lists' window
(SEARCH_TEXT_MAX_UNITS) when N is larger. The borrowed sessions are about other people: they are
what a long history adds, not answers.
"""

import argparse
import json
import os
import sys
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings_test")

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "retrieval_dev.json"

# Each variant is a set of setting overrides (and whether message units are searched).
VARIANTS: dict[str, dict] = {
    "baseline": {},
    "chunks-only (before issue 11)": {"SEARCH_INCLUDE_MESSAGES": False},
    "window-0-0": {"SEARCH_WINDOW_BEFORE": 0, "SEARCH_WINDOW_AFTER": 0},
    "window-0-1": {"SEARCH_WINDOW_BEFORE": 0, "SEARCH_WINDOW_AFTER": 1},  # before round 3
    "window-1-1": {"SEARCH_WINDOW_BEFORE": 1, "SEARCH_WINDOW_AFTER": 1},
    "window-2-2": {"SEARCH_WINDOW_BEFORE": 2, "SEARCH_WINDOW_AFTER": 2},
    "chunk-weight-0.5": {"SEARCH_CHUNK_WEIGHT": 0.5},
    "chunk-weight-2": {"SEARCH_CHUNK_WEIGHT": 2.0},
    "expand-names": {"SEARCH_EXPAND_NAMES": True},
    "norm-1 (log length)": {"SEARCH_TEXT_RANK_NORMALIZATION": 1},
    "norm-2 (length)": {"SEARCH_TEXT_RANK_NORMALIZATION": 2},
    "norm-32 (rank/(rank+1))": {"SEARCH_TEXT_RANK_NORMALIZATION": 32},
    "neighbours-50-tokens": {"SEARCH_NEIGHBOUR_MAX_TOKENS": 50},
    # The labelled scopes hold about 100 units each, so the vector lists compare every vector
    # (exact). A larger scope compares sign bits and re-ranks max(SEARCH_RERANK_CANDIDATES,
    # SEARCH_CANDIDATES) of them by cosine: "bits-15" re-ranks 15 of about 100, as a scope of
    # about 650 units would with the defaults; "exact-15" has the same list lengths, exact.
    "exact-15": {"SEARCH_CANDIDATES": 15},
    "bits-15": {"SEARCH_CANDIDATES": 15, "SEARCH_RERANK_CANDIDATES": 15},
    # For the long sets (tests/data/retrieval_long_*.json: about 600 units per scope, which
    # the defaults search through the sign bits and the text bounds): every vector compared
    # exactly, more re-ranked, and the bounds that keep a large scope's cost down made tighter.
    "exact": {"SEARCH_RERANK_CANDIDATES": 100_000},
    "rerank-50": {"SEARCH_RERANK_CANDIDATES": 50},
    "rerank-200": {"SEARCH_RERANK_CANDIDATES": 200},
    "text-units-300": {"SEARCH_TEXT_MAX_UNITS": 300},
    "text-units-500": {"SEARCH_TEXT_MAX_UNITS": 500},
    "text-units-1000": {"SEARCH_TEXT_MAX_UNITS": 1000},
    "text-units-5000": {"SEARCH_TEXT_MAX_UNITS": 5000},
    "text-matches-100": {"SEARCH_TEXT_MAX_MATCHES": 100},
    "text-matches-200": {"SEARCH_TEXT_MAX_MATCHES": 200},
    "candidates-20": {"SEARCH_CANDIDATES": 20},
    "candidates-30": {"SEARCH_CANDIDATES": 30},
    "recency-0": {"SEARCH_RECENCY_WEIGHT": 0.0},
    "recency-0.008": {"SEARCH_RECENCY_WEIGHT": 0.008},
    "rrf-10": {"SEARCH_RRF_K": 10},
    "rrf-40": {"SEARCH_RRF_K": 40},
    "rrf-60": {"SEARCH_RRF_K": 60},  # the default before the long sets
    "recency-0.002": {"SEARCH_RECENCY_WEIGHT": 0.002},
    "idf-off": {"SEARCH_TEXT_IDF": False},  # ts_rank_cd alone, as before the long sets
}


def padding(data: dict, legacy: dict, units: int, small: dict) -> list[list[dict]]:
    """Sessions of the other legacies of `data` and of the small set `small`, in turn, until
    they hold `units` messages."""
    if units <= 0:
        return []
    pool = [session for other in data["legacies"] if other is not legacy
            for session in other["sessions"]]
    if small["legacies"] != data["legacies"]:
        pool += [session for other in small["legacies"] for session in other["sessions"]]
    sessions: list[list[dict]] = []
    while units > 0 and pool:
        session = pool[len(sessions) % len(pool)]
        sessions.append(session)
        units -= len(session)
    return sessions


def load(data: dict, pad_units: int = 0) -> list[dict]:
    """Every legacy of the set with its user and one closed, archived, embedded conversation per
    session; the sessions a week apart, the last one a day ago. Returns per legacy
    {user, legacy, conversations}."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from conversations import services
    from conversations.models import ConversationChunk, Message
    from facts.services import legacy_create

    loaded = []
    now = timezone.now()
    small = json.loads(DATA.read_text(encoding="utf-8")) if pad_units > 0 else {}
    for entry in data["legacies"]:
        user = get_user_model().objects.create_user(username=entry["username"], password="x")
        legacy = legacy_create(user=user, name=entry["name"])
        conversations = []
        # The legacy's own sessions first (the questions' evidence names them by position).
        sessions = entry["sessions"] + padding(data, entry, pad_units, small)
        for number, session in enumerate(sessions):
            conversation = services.conversation_create(user=user, legacy=legacy,
                                                        title=f"Session {number + 1}")
            for message in session:
                # Outside a transaction, each append's jobs run at once (Q_CLUSTER sync).
                services.message_append(conversation=conversation, role=message["role"],
                                        content=message["content"])
            services.conversation_close(conversation=conversation)
            at = now - timedelta(days=1 + 7 * (len(sessions) - 1 - number))
            # A second per message, so that recency (and its ties) follow the order said.
            for message in Message.objects.filter(conversation=conversation):
                Message.objects.filter(pk=message.pk).update(
                    created_at=at + timedelta(seconds=message.sequence))
            for chunk in ConversationChunk.objects.filter(conversation=conversation):
                ConversationChunk.objects.filter(pk=chunk.pk).update(
                    created_at=at + timedelta(seconds=chunk.message_range_end - 1))
            conversations.append(conversation)
        loaded.append({"user": user, "legacy": legacy, "conversations": conversations})
    return loaded


def evaluate(data: dict, loaded: list[dict], ks: list[int], include_messages: bool) -> dict:
    from conversations.models import ConversationChunk
    from conversations.retrieval import search_conversations
    from memory_site.core.ai import count_tokens

    scores = {k: {"words": 0, "range": 0, "tokens": 0} for k in ks}
    by_kind: dict[str, dict[int, int]] = {}
    left_out = 0
    for question in data["questions"]:
        target = loaded[question["legacy"]]
        result = search_conversations(
            user=target["user"], legacy=target["legacy"], query=question["question"],
            k=max(ks), include_messages=include_messages,
        )
        words = [w.lower() for w in question["answer_words"]]
        evidence = [(target["conversations"][e["session"]].pk, e["sequence"])
                    for e in question["evidence"]]
        summaries = " ".join(ConversationChunk.objects.filter(
            conversation_id__in=[c for c, _ in evidence]).values_list("content", flat=True)).lower()
        if not all(w in summaries for w in words):
            left_out += 1
        for k in ks:
            hits = result.hits[:k]
            text = "\n".join(hit.content for hit in hits).lower()
            found = all(w in text for w in words)
            scores[k]["words"] += found
            scores[k]["range"] += any(
                hit.conversation_id == conversation and
                hit.message_range_start <= sequence < hit.message_range_end
                for hit in hits for conversation, sequence in evidence
            )
            scores[k]["tokens"] += count_tokens(text)
            by_kind.setdefault(question["kind"], {}).setdefault(k, 0)
            by_kind[question["kind"]][k] += found
    total = len(data["questions"])
    kinds = {kind: sum(1 for q in data["questions"] if q["kind"] == kind) for kind in by_kind}
    return {"total": total, "scores": scores, "by_kind": by_kind, "kinds": kinds,
            "left_out": left_out}


def report(name: str, outcome: dict, ks: list[int]) -> str:
    total = outcome["total"]
    cells = []
    for k in ks:
        s = outcome["scores"][k]
        kinds = " ".join(f"{kind} {outcome['by_kind'][kind][k]}/{outcome['kinds'][kind]}"
                         for kind in sorted(outcome["kinds"]))
        cells.append(f"@{k}: words {s['words'] / total:.0%} range {s['range'] / total:.0%} "
                     f"tokens {s['tokens'] / total:.0f} ({kinds})")
    return f"{name:<28} " + " | ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated names of VARIANTS")
    parser.add_argument("--k", default="1,3,5,10", help="comma-separated cut-offs")
    parser.add_argument("--pad-units", type=int, default=0,
                        help="newer sessions of other people after each legacy's own, until "
                             "they hold this many messages (default 0: none)")
    args = parser.parse_args()
    os.environ.setdefault("MEMORY_TEST_DB", "retrieval_quality")

    import django

    django.setup()
    from django.db import connection
    from django.test.utils import override_settings

    data = json.loads(args.data.read_text(encoding="utf-8"))
    ks = [int(k) for k in args.k.split(",")]
    original_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        loaded = load(data, args.pad_units)
        print(f"{len(data['questions'])} questions over "
              f"{sum(len(e['sessions']) for e in data['legacies'])} sessions"
              + (f", each legacy's followed by {args.pad_units:,} messages of others"
                 if args.pad_units else ""))
        for name in args.variants.split(","):
            overrides = dict(VARIANTS[name.strip()])
            include = overrides.pop("SEARCH_INCLUDE_MESSAGES", True)
            with override_settings(**overrides):
                outcome = evaluate(data, loaded, ks, include)
            if name == "baseline":
                print(f"answer words not all in the evidence's chunk summaries: "
                      f"{outcome['left_out']}/{outcome['total']}")
            print(report(name.strip(), outcome, ks))
    finally:
        connection.creation.destroy_test_db(original_name, verbosity=0)


if __name__ == "__main__":
    main()
