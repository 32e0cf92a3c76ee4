"""Benchmark at scale: search and context cost by scope size over a table of a million chunks,
ingest with 32 concurrent clients, and the archive of a 10,000-message import.

Not a test. It creates a throwaway database (MEMORY_TEST_DB, default `bench_scale`) on the
embedded server (or DATABASE_URL) and drops it at the end:

1. **Fill**, with SQL through psycopg, not the API: background users whose conversations hold
   `--table-chunks` chunks in all (random vectors, generated text, made by INSERT … SELECT), and
   one user per scope size with exactly that many retrieval units about one legacy (COPY;
   realistic sentences embedded with the offline hashing embedder). What a unit is, is read
   from the models at run time: when `Message` has an `embedding` field every message and every
   chunk is a unit (messages are stored with vectors); otherwise a chunk is a unit, and so is
   an unarchived user message. The HNSW and GIN indexes of the two tables are dropped during
   the load and built again as they were.
2. **Latency** through the whole Django stack with token authentication, in-process: a bare
   authenticated DRF GET, `GET /api/ai/legacies/{id}/search?q=…&k=3` and
   `GET /api/ai/conversations/{id}/context?query=…`, in a random order per round, p50 and p95
   as ratios to the bare GET of the same run.
3. **Ingest**: gunicorn as `make serve` runs it (gthread, WEB_CONCURRENCY × WEB_THREADS) and one
   job cluster on 127.0.0.1; 32 client threads append messages to their own conversations
   (`POST /api/ai/conversations/{id}/messages`), next to the same clients on a bare
   authenticated POST.
4. **Archive**: `manage.py import_conversations` of one 10,000-message conversation, then its
   jobs (summarise and archive; embed its messages, when the code has that job) run to the end
   with the offline providers, as a job worker would run them.

    .venv/bin/python benchmarks/bench_scale.py            # 1,000,000 chunks; about an hour here
    .venv/bin/python benchmarks/bench_scale.py --quick    # small sizes, a minute or two

Two trees side by side on one fill: `--keep FILE` keeps the database and writes its callers to
FILE; each tree then measures it with `--reuse FILE` (`--drop` with the last one).
"""

import argparse
import io
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings_test")
os.environ.setdefault("LOG_LEVEL", "WARNING")
# No rate limits: one caller makes hundreds of requests a minute here.
for _name in ("THROTTLE_RATE_USER", "THROTTLE_RATE_TURN", "THROTTLE_RATE_ANON"):
    os.environ.setdefault(_name, "")

WARMUP_ROUNDS = 5
CLIENTS = 32
MESSAGES_PER_CONVERSATION = 200
CHUNK_SIZE = 20  # messages per chunk, as SUMMARIZATION_BATCH_SIZE's default
TAIL = 10  # unarchived messages at the end of the caller's current conversation

NAMES = ["Rose", "Walter", "Edith", "Harold", "June", "Arthur", "Mabel", "Frank", "Nell", "Otto"]
PLACES = ["Dayton", "the lake house", "the farm in Ohio", "Brighton", "the old church",
          "the seaside", "his workshop", "the bakery", "the county fair", "the garden"]
THINGS = ["tulips", "a blue Ford", "a tame heron", "apple pies", "the choir", "a brass band",
          "fishing rods", "her sewing machine", "the wedding dress", "a radio set"]
VERBS = ["planted", "fixed", "sang about", "baked", "drove", "painted", "lost", "found",
         "sold", "kept"]
TOPICS = ["the garden", "the lake house", "her kitchen", "the church choir", "the war years",
          "the farm", "the seaside", "his workshop", "the wedding", "the old car"]


def _sentence(rng: random.Random, role: str) -> str:
    name, place, thing = rng.choice(NAMES), rng.choice(PLACES), rng.choice(THINGS)
    year = rng.randint(1940, 1999)
    if role == "assistant":
        return rng.choice([
            f"What do you remember most about {place}?",
            f"That sounds lovely. Did {name} often talk about {thing}?",
            f"So {name} {rng.choice(VERBS)} {thing} in {year}. What happened next?",
        ])
    return (f"{name} {rng.choice(VERBS)} {thing} at {place} in {year}, and we "
            f"{rng.choice(VERBS)} {rng.choice(THINGS)} the summer after.")


# --- URLs of the benchmark: the project's, plus the bare endpoints every figure is compared to --

def _urlpatterns():
    from django.urls import path
    from rest_framework.response import Response
    from rest_framework.views import APIView

    from memory_site.urls import urlpatterns

    class BareApi(APIView):
        """Authenticated, touches nothing: the floor every endpoint pays."""

        def get(self, request):
            return Response({"ok": True})

        def post(self, request):
            return Response({"ok": True, "length": len(request.data.get("content", ""))},
                            status=201)

    return [path("bench/bare", BareApi.as_view()), *urlpatterns]


urlpatterns: list = []


def application(environ, start_response):
    """gunicorn's WSGI app: the project's (memory_site.wsgi) with this module's URLs."""
    global urlpatterns, _wsgi
    if _wsgi is None:
        from django.conf import settings

        from memory_site.wsgi import application as project_application

        urlpatterns = _urlpatterns()
        settings.ROOT_URLCONF = __name__
        _wsgi = project_application
    return _wsgi(environ, start_response)


_wsgi = None


# --- Fill ------------------------------------------------------------------------------------

def _field_names(model) -> set[str]:
    return {f.name for f in model._meta.concrete_fields}


def message_units() -> bool:
    """Every message is a retrieval unit with a vector (the code after issue 11's item 2)."""
    from conversations.models import Message

    return "embedding" in _field_names(Message)


def _model_key() -> str:
    try:
        from conversations.embedding import model_key
    except ImportError:
        return ""
    return model_key()


def _columns(model, values: dict) -> tuple[list[str], list]:
    """Every stored column of `model` (generated ones excepted): the value given by field name
    in `values`, else the field's default."""
    from django.db import connection, models

    columns, row = [], []
    for field in model._meta.concrete_fields:
        if isinstance(field, models.GeneratedField):
            continue
        columns.append(field.column)
        if field.name in values:
            row.append(values[field.name])
        elif field.attname in values:
            row.append(values[field.attname])
        else:
            value = field.get_db_prep_save(field.get_default(), connection)
            row.append(json.dumps(value.adapted) if hasattr(value, "adapted") else value)
    return columns, row


class _Copy:
    """COPY of model rows through psycopg, the values given by field name."""

    def __init__(self, model):
        self.model = model
        self.rows: list[list] = []
        self.columns: list[str] | None = None

    def add(self, **values) -> None:
        columns, row = _columns(self.model, values)
        self.columns = self.columns or columns
        self.rows.append(row)

    def flush(self) -> int:
        from django.db import connection
        from psycopg import sql

        if not self.rows:
            return 0
        statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
            sql.Identifier(self.model._meta.db_table),
            sql.SQL(", ").join(map(sql.Identifier, self.columns)),
        )
        connection.ensure_connection()
        with connection.connection.cursor() as cursor, cursor.copy(statement) as copy:
            for row in self.rows:
                copy.write_row(row)
        count, self.rows = len(self.rows), []
        return count


def _vector_text(vector: list[float]) -> str:
    return "[" + ",".join(f"{v:.6g}" for v in vector) + "]"


def _heavy_indexes(tables: list[str]) -> list[tuple[str, str]]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s)"
            " AND (indexdef ILIKE '%% USING hnsw %%' OR indexdef ILIKE '%% USING gin %%')",
            [tables],
        )
        return cursor.fetchall()


def _people(count: int, prefix: str) -> list[tuple]:
    """`count` users, each the owner of a legacy of their own, with an API token."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from facts.models import Legacy, LegacyMembership

    user_model = get_user_model()
    users = user_model.objects.bulk_create(
        [user_model(username=f"{prefix}-{i}") for i in range(count)], batch_size=2000
    )
    legacies = Legacy.objects.bulk_create(
        [Legacy(name=f"{rng_name(i)} Remembered", created_by=u) for i, u in enumerate(users)],
        batch_size=2000,
    )
    LegacyMembership.objects.bulk_create(
        [LegacyMembership(legacy=legacy, user=user, role="owner")
         for user, legacy in zip(users, legacies, strict=True)], batch_size=2000,
    )
    tokens = Token.objects.bulk_create([Token(user=u, key=Token.generate_key()) for u in users],
                                       batch_size=2000)
    return list(zip(users, legacies, tokens, strict=True))


def rng_name(i: int) -> str:
    return f"{NAMES[i % len(NAMES)]} {['Whitfield', 'Okafor', 'Lindqvist', 'Moreau'][i % 4]}"


def fill_background(table_chunks: int, say) -> int:
    """Users in the thousands whose conversations hold `table_chunks` chunks, by INSERT … SELECT
    (random vectors, generated text); the chunks made."""
    from django.conf import settings
    from django.db import connection

    from conversations.models import Conversation, ConversationChunk

    if table_chunks <= 0:
        return 0
    per_conversation, per_user = 50, 10
    users = max(1, -(-table_chunks // (per_conversation * per_user)))
    people = _people(users, "background")
    conversations = Conversation.objects.bulk_create(
        [Conversation(user=user, legacy=legacy, title=f"Talk {k}", status="shutdown_clean",
                      message_count=per_conversation * CHUNK_SIZE)
         for user, legacy, _ in people for k in range(per_user)], batch_size=5000,
    )
    key = _model_key()
    fields = _field_names(ConversationChunk)
    columns = ["id", "conversation_id", "user_id", "legacy_id", "content", "embedding",
               "message_range_start", "message_range_end", "created_at"]
    expressions = [
        "gen_random_uuid()", "c.id", "c.user_id", "c.legacy_id",
        # Realistic enough for full text: names, places, things, years.
        "format('They talked about %%s and %%s at %%s in %%s; %%s remembered %%s.',"
        " (%(things)s::text[])[1 + floor(random() * 10)::int], (%(things)s::text[])[1 + floor(random() * 10)::int],"
        " (%(places)s::text[])[1 + floor(random() * 10)::int], 1940 + floor(random() * 60)::int,"
        " (%(names)s::text[])[1 + floor(random() * 10)::int], (%(places)s::text[])[1 + floor(random() * 10)::int])",
        # The correlation to g.k makes PostgreSQL draw a new vector per row.
        "(SELECT array_agg(random() - 0.5) FROM generate_series(1, %(dims)s) d"
        " WHERE g.k >= 0)::vector",
        f"g.k * {CHUNK_SIZE}", f"g.k * {CHUNK_SIZE} + {CHUNK_SIZE}",
        "now() - random() * interval '365 days'",
    ]
    if "embedding_model" in fields:
        columns.append("embedding_model")
        expressions.append("%(key)s")
    made, ids = 0, [c.pk for c in conversations]
    started = time.perf_counter()
    step = max(1, 20000 // per_conversation)
    for i in range(0, len(ids), step):
        left = table_chunks - made
        if left <= 0:
            break
        batch = ids[i:i + step]
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {ConversationChunk._meta.db_table} ({', '.join(columns)})"
                f" SELECT {', '.join(expressions)}"
                " FROM conversations_conversation c"
                f" CROSS JOIN generate_series(0, {per_conversation - 1}) AS g(k)"
                " WHERE c.id = ANY(%(ids)s::uuid[])"
                " ORDER BY c.id, g.k LIMIT %(left)s",
                {"ids": batch, "left": left, "dims": settings.EMBEDDING_DIMENSIONS, "key": key,
                 "things": THINGS, "places": PLACES, "names": NAMES},
            )
            made += cursor.rowcount
        if (i // step) % 10 == 0:
            say(f"  background chunks: {made:,} of {table_chunks:,} "
                f"({time.perf_counter() - started:.0f} s)")
    return made


def _unit_plan(units: int, with_messages: bool) -> list[tuple[int, int]]:
    """(messages, archived messages) per conversation of a user with exactly `units` units; the
    last conversation is the current one, with a tail of TAIL unarchived messages."""
    def count(messages: int, archived: int) -> int:
        chunks = archived // CHUNK_SIZE
        if with_messages:
            return messages + chunks
        return chunks + sum(1 for s in range(archived, messages) if s % 2 == 0)  # user's

    plan: list[tuple[int, int]] = []
    current = (TAIL, 0)
    left = units - count(*current)
    full = count(MESSAGES_PER_CONVERSATION, MESSAGES_PER_CONVERSATION)
    while left >= full:
        plan.append((MESSAGES_PER_CONVERSATION, MESSAGES_PER_CONVERSATION))
        left -= full
    if left > 0:
        # A last earlier conversation: archived whole chunks, then unarchived messages.
        per_chunk = CHUNK_SIZE + 1 if with_messages else 1
        chunks = left // per_chunk
        archived = chunks * CHUNK_SIZE
        rest = left - count(archived, archived)
        messages = archived + (rest if with_messages else 2 * rest - 1 if rest else 0)
        plan.append((messages, archived))
    plan.append(current)
    assert sum(count(m, a) for m, a in plan) == units, (units, plan)
    return plan


def fill_scope(units: int, person: tuple, rng: random.Random) -> dict:
    """The caller's history: conversations whose messages and chunks make `units` units."""
    from django.utils import timezone

    from conversations.models import Conversation, ConversationChunk, Message
    from memory_site.core.ai import count_tokens, get_embedder

    user, legacy, token = person
    with_messages = message_units()
    key = _model_key()
    embedder = get_embedder()
    plan = _unit_plan(units, with_messages)
    now = timezone.now()
    messages, chunks = _Copy(Message), _Copy(ConversationChunk)
    message_fields = _field_names(Message)
    chunk_fields = _field_names(ConversationChunk)
    conversation = None
    for index, (count, archived) in enumerate(plan):
        current = index == len(plan) - 1
        started_at = now - timedelta(days=(len(plan) - index) * 365 / len(plan))
        conversation = Conversation.objects.create(
            user=user, legacy=legacy, title=f"Talk {index}", message_count=count,
            status="active" if current else "shutdown_clean", last_message_at=started_at,
        )
        texts = [_sentence(rng, "user" if s % 2 == 0 else "assistant") for s in range(count)]
        vectors = embedder.embed(texts) if with_messages else [None] * count
        for sequence, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            values = {
                "id": uuid.uuid4(), "conversation": conversation.pk, "sequence": sequence,
                "role": "user" if sequence % 2 == 0 else "assistant", "content": text,
                "token_count": count_tokens(text), "metadata": "{}", "idempotency_key": None,
                "created_at": started_at + timedelta(seconds=30 * sequence),
            }
            if "embedding" in message_fields:
                values["embedding"] = _vector_text(vector)
            if "embedding_model" in message_fields:
                values["embedding_model"] = key
            messages.add(**values)
        summaries = [
            " ".join(texts[start:start + CHUNK_SIZE:2])[:1200]  # the user's sentences, as now
            for start in range(0, archived, CHUNK_SIZE)
        ]
        for k, (text, vector) in enumerate(zip(summaries, embedder.embed(summaries),
                                               strict=True)):
            values = {
                "id": uuid.uuid4(), "conversation": conversation.pk, "user": user.pk,
                "legacy": legacy.pk, "content": text, "embedding": _vector_text(vector),
                "message_range_start": k * CHUNK_SIZE,
                "message_range_end": (k + 1) * CHUNK_SIZE,
                "created_at": started_at + timedelta(hours=1),
            }
            if "embedding_model" in chunk_fields:
                values["embedding_model"] = key
            chunks.add(**values)
        if len(messages.rows) > 20000:
            messages.flush()
    messages.flush()
    chunks.flush()
    return {"units": units, "user": user, "legacy": legacy, "token": token.key,
            "conversation": conversation, "plan": plan}


def fill(*, scopes: list[int], table_chunks: int, say,
         skip_indexes: frozenset[str] = frozenset()) -> tuple[list[dict], dict]:
    from django.db import connection

    from conversations.models import ConversationChunk, Message

    tables = [ConversationChunk._meta.db_table, Message._meta.db_table]
    heavy = _heavy_indexes(tables)
    timings = {}
    started = time.perf_counter()
    with connection.cursor() as cursor:
        for name, _ in heavy:
            cursor.execute(f'DROP INDEX "{name}"')
    rng = random.Random(7)
    callers = _people(len(scopes), "caller")
    say(f"filling the scopes {', '.join(f'{s:,}' for s in scopes)} …")
    scope_rows = [fill_scope(units, person, rng) for units, person in zip(scopes, callers,
                                                                            strict=True)]
    scope_chunks = ConversationChunk.objects.count()
    timings["scopes"] = time.perf_counter() - started
    say(f"filling {max(0, table_chunks - scope_chunks):,} background chunks …")
    started = time.perf_counter()
    fill_background(table_chunks - scope_chunks, say)
    timings["background"] = time.perf_counter() - started
    started = time.perf_counter()
    unknown = skip_indexes - {name for name, _ in heavy}
    if unknown:
        raise SystemExit(f"--skip-index: no HNSW or GIN index named {', '.join(sorted(unknown))}")
    heavy = [(name, definition) for name, definition in heavy if name not in skip_indexes]
    say(f"building {len(heavy)} HNSW/GIN indexes again …")
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '4GB'")
        cursor.execute("SET max_parallel_maintenance_workers = 1")
        for name, definition in heavy:
            index_started = time.perf_counter()
            cursor.execute(definition)
            say(f"  {name}: {time.perf_counter() - index_started:.0f} s")
        cursor.execute("RESET maintenance_work_mem")
        cursor.execute("ANALYZE")
    timings["indexes"] = time.perf_counter() - started
    return scope_rows, timings


# --- Latency ---------------------------------------------------------------------------------

def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def measure(scopes: list[dict], *, repeats: int, budget_seconds: float,
            seed: int = 11) -> list[dict[str, tuple[float, float]]]:
    """p50 and p95 per endpoint and scope over `repeats` rounds, or fewer (at least 5) when the
    rounds take longer than `budget_seconds` per scope (code whose cost grows with the scope).
    Each round requests every scope's three endpoints, scopes and endpoints in a shuffled
    order, so that a slow minute of a shared machine weighs on every scope alike and the
    ratios between scopes are measured side by side."""
    from django.test import override_settings
    from rest_framework.test import APIClient

    rng = random.Random(seed)
    names = ("bare GET", "search", "context")
    timings: list[dict[str, list[float]]] = [{name: [] for name in names} for _ in scopes]
    clients = []
    for scope in scopes:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {scope['token']}")
        clients.append(client)
    started = time.perf_counter()
    with override_settings(ROOT_URLCONF=__name__):
        for round_number in range(WARMUP_ROUNDS + repeats):
            if (time.perf_counter() - started > budget_seconds * len(scopes)
                    and len(timings[0]["search"]) >= 5):
                break
            order = []
            for index, scope in enumerate(scopes):
                order += [
                    (index, "bare GET", "/bench/bare", {}),
                    (index, "search", f"/api/ai/legacies/{scope['legacy'].pk}/search",
                     {"q": f"{rng.choice(THINGS)} at {rng.choice(PLACES)}", "k": 3}),
                    (index, "context",
                     f"/api/ai/conversations/{scope['conversation'].pk}/context",
                     {"query": f"Tell me about {rng.choice(NAMES)} and {rng.choice(THINGS)}"}),
                ]
            rng.shuffle(order)  # no scope or endpoint always pays for being first
            for index, name, url, params in order:
                start = time.perf_counter()
                response = clients[index].get(url, params)
                elapsed = (time.perf_counter() - start) * 1000
                if response.status_code != 200:
                    raise RuntimeError(f"{name} answered {response.status_code}: "
                                       f"{response.content[:300]!r}")
                if round_number >= WARMUP_ROUNDS:
                    timings[index][name].append(elapsed)
    return [{**{name: _percentiles(samples) for name, samples in scope_timings.items()},
             "rounds": len(scope_timings["search"])} for scope_timings in timings]


# --- Ingest ----------------------------------------------------------------------------------

def _post_all(base: str, jobs: list[tuple[str, str, list[dict]]]) -> tuple[float, int]:
    """Each job (token, path, bodies) in a thread of its own, its bodies posted in order;
    (seconds, requests)."""
    errors: list[str] = []

    def client(token: str, path: str, bodies: list[dict]) -> None:
        headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        for body in bodies:
            request = urllib.request.Request(f"{base}{path}", json.dumps(body).encode(),
                                             headers)
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    response.read()
            except (urllib.error.URLError, OSError) as exc:
                errors.append(f"{path}: {exc}")
                return

    threads = [threading.Thread(target=client, args=job) for job in jobs]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{len(errors)} clients failed: {errors[:3]}")
    return seconds, sum(len(bodies) for _, _, bodies in jobs)


def ingest(*, database_name: str, messages: int) -> dict[str, float]:
    """Messages appended per second by CLIENTS concurrent clients, and the bare POST's rate."""
    from conversations.models import Conversation, Message
    from tests.support.stack import Cluster, Gunicorn, stack_env

    class BenchGunicorn(Gunicorn):
        def command(self) -> list[str]:
            command = super().command()
            command[command.index("memory_site.wsgi:application")] = \
                "benchmarks.bench_scale:application"
            return command

    people = _people(CLIENTS, "ingest")
    conversations = [Conversation.objects.create(user=u, legacy=legacy, title="Ingest")
                     for u, legacy, _ in people]
    rng = random.Random(5)
    bodies = [[{"role": "user" if n % 2 == 0 else "assistant",
                "content": _sentence(rng, "user" if n % 2 == 0 else "assistant")}
               for n in range(messages)] for _ in people]
    env = stack_env(database_name, THROTTLE_RATE_USER="", THROTTLE_RATE_TURN="",
                    THROTTLE_RATE_ANON="")
    web = BenchGunicorn(env, workers=int(os.environ.get("WEB_CONCURRENCY", "2")),
                        threads=int(os.environ.get("WEB_THREADS", "4")))
    jobs = Cluster(env)
    try:
        web.start()
        jobs.start()
        bare_seconds, bare_requests = _post_all(
            web.url, [(token.key, "/bench/bare", b) for (_, _, token), b in
                      zip(people, bodies, strict=True)])
        seconds, requests = _post_all(
            web.url, [(token.key, f"/api/ai/conversations/{c.pk}/messages", b)
                      for (_, _, token), c, b in zip(people, conversations, bodies,
                                                         strict=True)])
    except BaseException:
        for process in (web, jobs):
            sys.stderr.write(f"--- {process.name} log ---\n{process.log()}\n")
        raise
    finally:
        web.stop()
        jobs.stop()
    stored = Message.objects.filter(conversation__in=conversations).count()
    if stored != requests:
        raise RuntimeError(f"{requests} messages posted, {stored} stored")
    return {"messages/s": requests / seconds, "bare POST/s": bare_requests / bare_seconds}


# --- Archive ---------------------------------------------------------------------------------

def archive(*, messages: int) -> dict[str, float]:
    """Import one conversation of `messages` messages, then run its jobs to the end in this
    process (one worker's work); the seconds of each and what was archived and embedded."""
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.test import override_settings

    from conversations import tasks
    from conversations.models import Conversation, ConversationChunk, Message

    (user, legacy, _), = _people(1, "importer")
    rng = random.Random(3)
    line = {"username": user.username, "legacy_id": str(legacy.pk), "title": "A long history",
            "messages": [{"role": "user" if i % 2 == 0 else "assistant",
                          "content": _sentence(rng, "user" if i % 2 == 0 else "assistant")}
                         for i in range(messages)]}
    # A worker keeps its connection for DB_CONN_MAX_AGE (60 s by default), not the test
    # settings' 0, under which django-q2's broker reconnects at every job queued.
    connection.close()
    connection.settings_dict["CONN_MAX_AGE"] = int(os.environ.get("DB_CONN_MAX_AGE", 60))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.jsonl"
        path.write_text(json.dumps(line) + "\n")
        started = time.perf_counter()
        with override_settings(Q_CLUSTER={**settings.Q_CLUSTER, "sync": False}):
            call_command("import_conversations", str(path), stdout=io.StringIO(),
                         stderr=io.StringIO())
        import_seconds = time.perf_counter() - started
    conversation = Conversation.objects.get(user=user)
    embeds = hasattr(tasks, "embed_conversation") and message_units()
    started = time.perf_counter()
    # The jobs a worker would run; with sync on, each follow-up job runs at once.
    with override_settings(Q_CLUSTER={**settings.Q_CLUSTER, "sync": True}):
        tasks.summarize_conversation(str(conversation.pk))
        summarized = time.perf_counter() - started
        if embeds:
            while Message.objects.filter(conversation=conversation, embedding__isnull=True,
                                         role__in=["user", "assistant"]).exists():
                if not tasks.embed_conversation(str(conversation.pk)).get("embedded"):
                    break  # the embedder failed: reported as not embedded below
    jobs_seconds = time.perf_counter() - started
    ranges = sorted(ConversationChunk.objects.filter(conversation=conversation)
                    .values_list("message_range_start", "message_range_end"))
    ends = [0] + [end for _, end in ranges]
    tiled = [start for start, _ in ranges] == ends[:-1]
    embedded = (Message.objects.filter(conversation=conversation, embedding__isnull=False).count()
                if embeds else None)
    connection.close()
    connection.settings_dict["CONN_MAX_AGE"] = 0
    return {"import s": import_seconds, "summarise s": summarized, "jobs s": jobs_seconds,
            "total s": import_seconds + jobs_seconds, "archived to": ends[-1] if tiled else -1,
            "embedded": embedded, "messages": messages}


# --- Report ----------------------------------------------------------------------------------

def report(*, scopes: list[dict], results: list[dict], ingest_rates: dict | None,
           archived: dict | None, table_chunks: int, fill_timings: dict, repeats: int,
           skipped_indexes: frozenset[str] = frozenset()) -> str:
    lines = [
        f"chunks in table: {table_chunks:,}; units are "
        + ("messages (both roles, embedded) and chunks" if message_units()
           else "chunks and unarchived user messages")
        + f"; up to {repeats} rounds after {WARMUP_ROUNDS} warm-up rounds, each requesting "
        "every scope (side by side, in a shuffled order); "
        f"filled in {sum(fill_timings.values()):.0f} s ("
        + ", ".join(f"{k} {v:.0f} s" for k, v in fill_timings.items()) + ")"
        + (f"; not built after the load (--skip-index): {', '.join(sorted(skipped_indexes))}"
           if skipped_indexes else ""),
        "",
        f"{'units in scope':>14} {'rounds':>6} {'bare p50 ms':>11} {'bare p95 ms':>11} "
        f"{'search p50':>10} {'search p95':>10} {'context p50':>11} {'context p95':>11} "
        f"{'search p95 ms':>13} {'context p50 ms':>14}",
    ]
    for scope, result in zip(scopes, results, strict=True):
        bare50, bare95 = result["bare GET"]
        search50, search95 = result["search"]
        context50, context95 = result["context"]
        lines.append(
            f"{scope['units']:>14,} {result['rounds']:>6} {bare50:>11.1f} {bare95:>11.1f} "
            f"{search50 / bare50:>9.1f}× {search95 / bare95:>9.1f}× "
            f"{context50 / bare50:>10.1f}× {context95 / bare95:>10.1f}× "
            f"{search95:>13.1f} {context50:>14.1f}"
        )
    lines.append("(search and context columns: p50 and p95 as multiples of the bare GET's)")
    if ingest_rates:
        lines += ["", f"ingest, {CLIENTS} concurrent clients on gunicorn: "
                  f"{ingest_rates['messages/s']:.0f} messages appended/s, bare POST "
                  f"{ingest_rates['bare POST/s']:.0f}/s "
                  f"({ingest_rates['messages/s'] / ingest_rates['bare POST/s']:.0%} of it)"]
    if archived:
        embedded = ("not a step of this code" if archived["embedded"] is None
                    else f"{archived['embedded']:,} embedded")
        lines += ["", f"archive of an imported conversation of {archived['messages']:,} messages: "
                  f"import {archived['import s']:.1f} s, summarise and archive "
                  f"{archived['summarise s']:.1f} s, jobs in all {archived['jobs s']:.1f} s, "
                  f"total {archived['total s']:.1f} s; chunks cover messages "
                  f"0..{archived['archived to']:,}; {embedded}"]
    lines += ["", "targets:"]
    by_units = {s["units"]: r for s, r in zip(scopes, results, strict=True)}
    if 100 in by_units and 10000 in by_units:
        small, large = by_units[100]["search"][1], by_units[10000]["search"][1]
        lines.append(f"  search p95 at 10,000 units ≤ 1.5 × at 100 units: {large:.1f} ms vs "
                     f"{small:.1f} ms = {large / small:.2f}× "
                     + ("PASS" if large <= 1.5 * small else "FAIL"))
    worst = max((r["context"][0] / r["bare GET"][0], s["units"])
                for s, r in zip(scopes, results, strict=True))
    lines.append(f"  context p50 ≤ 5 × bare GET at every scope: worst {worst[0]:.1f}× "
                 f"(at {worst[1]:,} units) " + ("PASS" if worst[0] <= 5 else "FAIL"))
    if archived:
        complete = (archived["archived to"] >= archived["messages"] - CHUNK_SIZE
                    and archived["embedded"] in (None, archived["messages"]))
        lines.append(
            f"  {archived['messages']:,} messages archived and embedded ≤ 60 s: "
            f"{archived['total s']:.1f} s" + ("" if complete else " (not complete)") + " "
            + ("PASS" if complete and archived["embedded"] is not None
               and archived["total s"] <= 60 else "FAIL")
        )
    return "\n".join(lines)


def _save_fill(path: Path, scope_rows: list[dict], fill_timings: dict,
               skip_indexes: frozenset[str]) -> None:
    """What a later run needs to measure the kept database again (--keep, then --reuse)."""
    path.write_text(json.dumps({
        "scopes": [{"units": s["units"], "legacy": str(s["legacy"].pk), "token": s["token"],
                    "conversation": str(s["conversation"].pk)} for s in scope_rows],
        "fill_timings": fill_timings, "skipped_indexes": sorted(skip_indexes),
    }, indent=1))


def _load_fill(path: Path) -> tuple[list[dict], dict, frozenset[str]]:
    from types import SimpleNamespace

    kept = json.loads(path.read_text())
    scope_rows = [{"units": s["units"], "token": s["token"],
                   "legacy": SimpleNamespace(pk=s["legacy"]),
                   "conversation": SimpleNamespace(pk=s["conversation"])}
                  for s in kept["scopes"]]
    return scope_rows, kept["fill_timings"], frozenset(kept["skipped_indexes"])


def run(*, scopes: list[int], table_chunks: int, repeats: int, ingest_messages: int,
        archive_messages: int, database_name: str, budget_seconds: float = 300.0,
        say=print, skip_indexes: frozenset[str] = frozenset(), keep: Path | None = None,
        reused: tuple[list[dict], dict, frozenset[str]] | None = None) -> str:
    from conversations.models import ConversationChunk

    global urlpatterns
    urlpatterns = _urlpatterns()
    if reused:  # _load_fill of a --keep run's FILE
        scope_rows, fill_timings, skip_indexes = reused
        say("reusing the database filled before: scopes "
            + ", ".join(f"{s['units']:,}" for s in scope_rows))
    else:
        scope_rows, fill_timings = fill(scopes=scopes, table_chunks=table_chunks, say=say,
                                        skip_indexes=skip_indexes)
        if keep:
            _save_fill(keep, scope_rows, fill_timings, skip_indexes)
    say("measuring search and context, every scope in each round …")
    results = measure(scope_rows, repeats=repeats, budget_seconds=budget_seconds)
    for scope, result in zip(scope_rows, results, strict=True):
        say(f"  {scope['units']:,} units, {result['rounds']} rounds: " + ", ".join(
            f"{name} p50 {result[name][0]:.1f} ms p95 {result[name][1]:.1f} ms"
            for name in ("bare GET", "search", "context")))
    rates = None
    if ingest_messages:
        say(f"ingest: {CLIENTS} clients × {ingest_messages} messages …")
        rates = ingest(database_name=database_name, messages=ingest_messages)
    archived = None
    if archive_messages:
        say(f"archive: import and archive {archive_messages:,} messages …")
        archived = archive(messages=archive_messages)
    return report(scopes=scope_rows, results=results, ingest_rates=rates, archived=archived,
                  table_chunks=ConversationChunk.objects.count(), fill_timings=fill_timings,
                  repeats=repeats, skipped_indexes=skip_indexes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes: scopes 100 and 1,000, 20,000 chunks, 20 requests")
    parser.add_argument("--scopes", default="100,1000,10000,50000",
                        help="units in the caller's scope, comma-separated")
    parser.add_argument("--table-chunks", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--budget", type=float, default=300.0,
                        help="seconds of requests per scope at most (at least 5 rounds)")
    parser.add_argument("--ingest-messages", type=int, default=None,
                        help="messages per client (0: skip the ingest part; default 25,"
                             " 0 with --keep or --reuse)")
    parser.add_argument("--archive-messages", type=int, default=None,
                        help="messages of the imported conversation (0: skip; default 10,000,"
                             " 0 with --keep or --reuse)")
    parser.add_argument("--skip-index", action="append", default=[], metavar="NAME",
                        help="an HNSW or GIN index not built again after the load (repeatable):"
                             " one no measured query reads, whose build would take most of the"
                             " run (the chunks' HNSW index at a million chunks); the report"
                             " names it")
    parser.add_argument("--keep", type=Path, metavar="FILE",
                        help="keep the filled database and write what measures it again to"
                             " FILE: another tree (`git worktree`, `git archive`) then measures"
                             " the same fill with --reuse FILE, side by side")
    parser.add_argument("--reuse", type=Path, metavar="FILE",
                        help="measure the database a --keep run filled (MEMORY_TEST_DB as"
                             " then) without filling it again: its scopes and table, whatever"
                             " --scopes and --table-chunks say; it is kept unless --drop")
    parser.add_argument("--drop", action="store_true",
                        help="with --reuse: drop the database at the end")
    args = parser.parse_args()
    if args.keep and args.reuse:
        parser.error("--keep fills a database, --reuse measures a kept one: not both")
    if args.drop and not args.reuse:
        parser.error("--drop goes with --reuse (a run without --keep or --reuse drops its"
                     " database anyway)")
    if args.reuse and not args.reuse.is_file():
        parser.error(f"--reuse {args.reuse}: no such file (written by a --keep run)")
    kept = bool(args.keep or args.reuse)
    if kept and (args.ingest_messages or args.archive_messages):
        parser.error("the ingest and archive parts add users and messages to the database:"
                     " run them without --keep or --reuse, so that a kept fill stays as filled")
    if args.ingest_messages is None:
        args.ingest_messages = 0 if kept else 25
    if args.archive_messages is None:
        args.archive_messages = 0 if kept else 10_000
    scopes = [int(s) for s in args.scopes.split(",") if s]
    if args.quick:
        scopes, args.table_chunks, args.repeats = [100, 1000], 20_000, 20
        args.ingest_messages, args.archive_messages = (0, 0) if kept else (5, 1000)
    os.environ.setdefault("MEMORY_TEST_DB", "bench_scale")

    import django

    django.setup()
    from django.db import connection

    # SIGTERM (and Ctrl-C) still drop the database: the `finally` below runs. A kept one stays
    # only once its FILE is written (--keep) or when it held the fill (--reuse).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    original_name = connection.settings_dict["NAME"]
    if args.keep:
        args.keep.unlink(missing_ok=True)  # written again once the fill is complete
    # serialize=False: a kept database of a million chunks is not read into memory.
    name = connection.creation.create_test_db(verbosity=0, autoclobber=True,
                                              keepdb=bool(args.reuse), serialize=False)
    keep, reused = False, None
    try:
        if args.reuse:
            from facts.models import Legacy

            reused = _load_fill(args.reuse)
            legacies = [s["legacy"].pk for s in reused[0]]
            if Legacy.objects.filter(pk__in=legacies).count() != len(legacies):
                sys.exit(f"database {name} does not hold the fill of {args.reuse} (dropped"
                         " by --drop, or another MEMORY_TEST_DB?); fill it again with --keep")
            keep = not args.drop
        print(run(scopes=scopes, table_chunks=args.table_chunks, repeats=args.repeats,
                  ingest_messages=args.ingest_messages, archive_messages=args.archive_messages,
                  database_name=name, budget_seconds=args.budget,
                  say=lambda text: print(text, file=sys.stderr, flush=True),
                  skip_indexes=frozenset(args.skip_index), keep=args.keep, reused=reused))
    finally:
        if keep or (args.keep and args.keep.is_file()):
            connection.close()
            print(f"database {name} kept", file=sys.stderr)
        else:
            connection.creation.destroy_test_db(original_name, verbosity=0)


if __name__ == "__main__":
    main()
