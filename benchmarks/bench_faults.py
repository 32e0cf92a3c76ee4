"""Faults survived: the production stack under concurrent clients while processes are killed.

Not a test (tests/e2e/test_faults.py runs it on a small size). It starts gunicorn with two
workers and two django-q2 clusters on one queue, on a throwaway database of the embedded
server; N clients post messages into their conversations through the API (each with an
Idempotency-Key, retried until acknowledged); one cluster's model calls are slow, and it is
SIGKILLed while one is in flight (in the middle of a summarisation job) and started again; a
gunicorn worker is SIGKILLed while requests are in flight (its master starts another). Then
every conversation is closed, the sweep runs as its schedule would, and it checks that every
acknowledged message is stored once with gap-free sequences, no message range is archived
twice, every conversation is summarised to its last message and archived to its end, and
nothing is left `processing`:

    .venv/bin/python benchmarks/bench_faults.py --clients 32 --conversations 4 --messages 40
"""

import argparse
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.client import HTTPException
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings_test")

# Small limits, so that a short run archives several batches and a killed job is recovered
# within seconds; they satisfy the system checks (conversations.E002) of the clusters.
STACK_SETTINGS = {
    "Q_WORKERS": "1",
    "Q_TIMEOUT": "20",
    "Q_RETRY": "22",
    "MEMORY_PROCESSING_TIMEOUT_SECONDS": "21",
    "MEMORY_RETRY_BACKOFF_SECONDS": "2",
    "SUMMARIZATION_JOB_TIME_BUDGET_SECONDS": "3",
    "SUMMARIZATION_THRESHOLD": "10",
    "SUMMARIZATION_BATCH_SIZE": "8",
    "THROTTLE_RATE_USER": "",
    "THROTTLE_RATE_TURN": "",
}
# The slow cluster's model: every call waits this long, so a kill lands inside one.
SLOW_MODEL_SECONDS = 0.8


@dataclass
class Report:
    clients: int
    conversations: int
    messages: int
    broker: str = "orm"
    seconds_traffic: float = 0.0
    seconds_total: float = 0.0
    requests: int = 0
    retried: int = 0
    replayed: int = 0
    connection_errors: int = 0
    killed_cluster_during_model_call: bool = False
    killed_web_worker: int | None = None
    web_workers_after: int = 0
    recovered_stuck: int = 0
    problems: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join([
            f"clients={self.clients} conversations={self.conversations} "
            f"messages/conversation={self.messages} queue={self.broker}",
            f"traffic {self.seconds_traffic:.1f}s, until all archived {self.seconds_total:.1f}s",
            f"requests {self.requests}, retried {self.retried} (connection errors "
            f"{self.connection_errors}, replayed by Idempotency-Key {self.replayed})",
            f"job cluster killed during a model call: {self.killed_cluster_during_model_call}; "
            f"web worker killed: {self.killed_web_worker}, workers after: "
            f"{self.web_workers_after}; stuck summaries recovered by the sweep: "
            f"{self.recovered_stuck}",
            "invariants: " + ("all hold" if not self.problems else "; ".join(self.problems)),
        ])


class _Client(threading.Thread):
    """Posts its conversations' messages in order, each retried with its Idempotency-Key until
    acknowledged; then closes them."""

    def __init__(self, base: str, token: str, conversation_ids: list[str], messages: int,
                 report: Report, lock: threading.Lock, acked: dict):
        super().__init__(daemon=True)
        self.base, self.token, self.ids, self.messages = base, token, conversation_ids, messages
        self.report, self.lock, self.acked = report, lock, acked
        self.error: BaseException | None = None

    def _post(self, path: str, body: dict, key: str | None = None) -> tuple[int, dict]:
        headers = {"Authorization": f"Token {self.token}", "Content-Type": "application/json"}
        if key:
            headers["Idempotency-Key"] = key
        for attempt in range(60):
            request = urllib.request.Request(f"{self.base}{path}", json.dumps(body).encode(),
                                             headers)
            with self.lock:
                self.report.requests += 1
                self.report.retried += attempt > 0
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return response.status, json.loads(response.read())
            except urllib.error.HTTPError as error:
                if error.code < 500 and error.code != 429:
                    return error.code, json.loads(error.read() or b"{}")
            except (urllib.error.URLError, HTTPException, OSError):
                with self.lock:
                    self.report.connection_errors += 1
            time.sleep(0.2)
        raise RuntimeError(f"no answer for {path} after 60 attempts")

    def run(self) -> None:
        try:
            for n in range(self.messages):
                for conversation_id in self.ids:
                    role = "user" if n % 2 == 0 else "assistant"
                    content = (f"Mom planted row {n} of the garden in {conversation_id[:8]}."
                               if role == "user" else f"What grew in row {n}?")
                    status, body = self._post(
                        f"/api/ai/conversations/{conversation_id}/messages",
                        {"role": role, "content": content}, key=f"{conversation_id}:{n}")
                    if status not in (200, 201):
                        raise RuntimeError(f"message {n}: {status} {body}")
                    with self.lock:
                        self.report.replayed += status == 200
                        self.acked[conversation_id].append((body["sequence"], role, content))
            for conversation_id in self.ids:
                status, body = self._post(f"/api/ai/conversations/{conversation_id}/close", {})
                if status != 200:
                    raise RuntimeError(f"close: {status} {body}")
        except BaseException as exc:  # noqa: BLE001 - reported by run()
            self.error = exc


def _fill(clients: int, conversations: int) -> list[tuple[str, list[str]]]:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from conversations.models import Conversation
    from facts.models import Legacy, LegacyMembership

    users = []
    for c in range(clients):
        user = get_user_model().objects.create_user(f"fault-client-{c}", password="x" * 12)
        legacy = Legacy.objects.create(name=f"Rose Whitfield {c}", created_by=user)
        LegacyMembership.objects.create(legacy=legacy, user=user, role="owner")
        ids = [str(Conversation.objects.create(user=user, legacy=legacy, title=f"c{c}-{k}").pk)
               for k in range(conversations)]
        users.append((Token.objects.create(user=user).key, ids))
    return users


def _state(conversation_ids: list[str]) -> dict[str, dict]:
    from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message

    state = {}
    for conversation_id in conversation_ids:
        memories = ConversationMemory.objects.filter(conversation_id=conversation_id)
        state[conversation_id] = {
            "status": Conversation.objects.get(pk=conversation_id).status,
            "messages": list(Message.objects.filter(conversation_id=conversation_id)
                             .order_by("sequence").values_list("sequence", "role", "content")),
            "chunks": sorted(ConversationChunk.objects.filter(conversation_id=conversation_id)
                             .values_list("message_range_start", "message_range_end")),
            "processing": memories.filter(status="processing").count(),
            "summarised_to": max(memories.filter(status="completed")
                                 .values_list("end_sequence", flat=True), default=-1),
        }
    return state


def _done(state: dict[str, dict]) -> bool:
    return all(
        s["status"] == "shutdown_clean" and s["processing"] == 0
        and s["summarised_to"] == len(s["messages"]) - 1
        and (s["chunks"][-1][1] if s["chunks"] else 0) == len(s["messages"])
        for s in state.values()
    )


def _problems(state: dict[str, dict], acked: dict, messages: int) -> list[str]:
    problems = []
    for conversation_id, s in state.items():
        stored = s["messages"]
        if sorted(acked[conversation_id]) != stored:
            problems.append(f"{conversation_id}: stored messages differ from the acknowledged")
        if [seq for seq, _, _ in stored] != list(range(messages)):
            problems.append(f"{conversation_id}: sequences are not 0..{messages - 1}")
        ends = [0] + [end for _, end in s["chunks"]]
        if [start for start, _ in s["chunks"]] != ends[:-1] or ends[-1] != len(stored):
            problems.append(f"{conversation_id}: chunk ranges {s['chunks']} do not tile 0..n")
        if s["processing"]:
            problems.append(f"{conversation_id}: {s['processing']} summaries processing")
        if s["summarised_to"] != len(stored) - 1:
            problems.append(f"{conversation_id}: summarised to {s['summarised_to']}")
        if s["status"] != "shutdown_clean":
            problems.append(f"{conversation_id}: not closed")
    return problems


# The sweep as the clusters' schedule runs it (every minute; here every two seconds), in a
# process of its own so that it enqueues on the stack's broker.
SWEEP_LOOP = """
import json, time
from conversations.tasks import sweep
while True:
    print(json.dumps(sweep()), flush=True)
    time.sleep(2)
"""


def _sweeper(env: dict[str, str]):
    from tests.support.stack import _Process

    class Sweeper(_Process):
        name = "sweep"

        def command(self) -> list[str]:
            return [sys.executable, "manage.py", "shell", "-c", SWEEP_LOOP]

        def recovered(self) -> int:
            lines = [line for line in self.log(10**7).splitlines() if line.startswith("{")]
            return sum(json.loads(line)["recovered"] for line in lines)

    sweeper = Sweeper(env)
    sweeper._spawn()
    return sweeper


def run(*, database_name: str, clients: int = 16, conversations: int = 2, messages: int = 24,
        deadline_seconds: float = 75.0, redis_url: str = "") -> Report:
    """The scenario on `database_name` (which the calling process's default connection uses
    too), with the queue on the database, or on Redis with `redis_url`; raises nothing for a
    broken invariant: see `Report.problems`."""
    from tests.support.openai_server import FakeOpenAIServer
    from tests.support.stack import Cluster, Gunicorn, stack_env, wait_until

    report = Report(clients=clients, conversations=clients * conversations, messages=messages,
                    broker="redis" if redis_url else "orm")
    started = time.monotonic()
    users = _fill(clients, conversations)
    all_ids = [cid for _, ids in users for cid in ids]
    acked: dict[str, list] = {cid: [] for cid in all_ids}
    slow_model = FakeOpenAIServer().start()
    for _ in range(clients * conversations * messages):
        slow_model.delay(SLOW_MODEL_SECONDS)
    broker = {"Q_BROKER": "redis", "REDIS_URL": redis_url} if redis_url else {}
    env = stack_env(database_name, **STACK_SETTINGS, **broker)
    slow_env = {**env, "LLM_PROVIDER": "openai", "LLM_BASE_URL": slow_model.base_url,
                "LLM_TIMEOUT_SECONDS": "5", "LLM_MAX_RETRIES": "1",
                "LLM_RETRY_BACKOFF_SECONDS": "0.2"}
    web = Gunicorn(env, workers=2, threads=4)
    fast_jobs, slow_jobs = Cluster(env), Cluster(slow_env)
    processes = [web, fast_jobs, slow_jobs]
    try:
        web.start()
        fast_jobs.start()
        slow_jobs.start()
        lock = threading.Lock()
        threads = [_Client(web.url, token, ids, messages, report, lock, acked)
                   for token, ids in users]
        traffic_started = time.monotonic()
        for thread in threads:
            thread.start()
        total = clients * conversations * messages

        # A job of the slow cluster is waiting on the model: kill the cluster, start it again.
        if wait_until(lambda: len(slow_model.calls()) > 0, 30, 0.05):
            time.sleep(SLOW_MODEL_SECONDS / 4)
            slow_jobs.kill()
            report.killed_cluster_during_model_call = True
            slow_jobs = Cluster(slow_env).start()
            processes.append(slow_jobs)
        # A web worker in the middle of the traffic: its master starts another.
        wait_until(lambda: sum(map(len, acked.values())) >= total * 0.4, 60, 0.05)
        report.killed_web_worker = web.kill_worker()
        # The kill must land on requests in flight (their clients retry with the same key): on
        # a loaded machine the killed worker may have been idle, so kill again, at most twice.
        for _ in range(2):
            if wait_until(lambda: report.connection_errors > 0, 1.0, 0.05):
                break
            if sum(map(len, acked.values())) >= total * 0.9 or not web.worker_pids():
                break
            web.kill_worker()

        for thread in threads:
            thread.join(timeout=max(1.0, deadline_seconds - (time.monotonic() - started)))
        report.seconds_traffic = time.monotonic() - traffic_started
        errors = [t.error for t in threads if t.error is not None or t.is_alive()]
        if errors:
            report.problems.append(f"clients failed: {errors[:3]}")

        sweeper = _sweeper(env)
        processes.append(sweeper)
        wait_until(lambda: _done(_state(all_ids)),
                   max(5.0, deadline_seconds - (time.monotonic() - started)), 0.5)
        report.recovered_stuck = sweeper.recovered()
        report.web_workers_after = len(web.worker_pids())
        report.problems += _problems(_state(all_ids), acked, messages)
        report.seconds_total = time.monotonic() - started
        return report
    except BaseException:
        for process in processes:
            sys.stderr.write(f"--- {process.name} log ---\n{process.log()}\n")
        raise
    finally:
        for process in processes:
            process.stop()
        slow_model.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--conversations", type=int, default=4)
    parser.add_argument("--messages", type=int, default=40)
    parser.add_argument("--deadline", type=float, default=300.0)
    parser.add_argument("--redis-url", default="",
                        help="the queue on this Redis (default: on the database)")
    args = parser.parse_args()
    os.environ.setdefault("MEMORY_TEST_DB", "bench_faults")

    import django

    django.setup()
    from django.db import connection

    original_name = connection.settings_dict["NAME"]
    name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        report = run(database_name=name, clients=args.clients,
                     conversations=args.conversations, messages=args.messages,
                     deadline_seconds=args.deadline, redis_url=args.redis_url)
        print(report.text())
    finally:
        connection.close()
        connection.creation.destroy_test_db(original_name, verbosity=0)
    sys.exit(1 if report.problems else 0)


if __name__ == "__main__":
    main()
