"""Concurrency on the real database, and the end-to-end path through a real `qcluster` worker."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connection, connections

from conversations.models import Conversation, ConversationChunk, ConversationMemory
from conversations.services import summarization
from facts.models import LegacyFact
from tests.conftest import api_client_for
from tests.factories import ConversationFactory, LegacyFactory, UserFactory, import_messages

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
TRIGGERS = 50
THREADS = TRIGGERS  # every trigger really concurrent: one thread and one connection each


def test_fifty_concurrent_triggers_make_one_processing_row_and_one_call(settings, openai_server):
    owner = UserFactory()
    legacy = LegacyFactory(name="Rose Whitfield", created_by=owner)
    conversation = ConversationFactory(user=owner, legacy=legacy)
    import_messages(conversation, (("user" if i % 2 == 0 else "assistant",
                                    f"Mom was a nurse in Dayton, line {i}.") for i in range(8)))
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = openai_server.base_url
    # The one call stays in flight while every other trigger arrives.
    openai_server.chat_json({"summary": "Rose was a nurse in Dayton."}, delay=1.5)

    barrier = threading.Barrier(THREADS)
    results: list[object] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def trigger() -> None:
        try:
            barrier.wait()
            for _ in range(TRIGGERS // THREADS):
                fresh = Conversation.objects.select_related("legacy").get(pk=conversation.pk)
                memory = summarization.rolling_summary_update(conversation=fresh)
                with lock:
                    results.append(memory)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=trigger) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    assert len(results) == TRIGGERS
    assert len([r for r in results if r is not None]) == 1
    assert len(openai_server.calls()) == 1
    memories = list(ConversationMemory.objects.filter(conversation=conversation))
    assert [(m.status, m.memory_text) for m in memories] == [
        ("completed", "Rose was a nurse in Dayton.")]


# Generous: on a loaded 2-core machine the worker's first job can take a while to start; the
# wait ends as soon as the predicate holds.
WORKER_WAIT_SECONDS = 120


def _wait_for(predicate, timeout: float = WORKER_WAIT_SECONDS) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.25)
    return False


def test_end_to_end_through_a_real_qcluster(settings):
    owner = UserFactory(username="e2e-owner")
    legacy = LegacyFactory(name="Rose Whitfield", created_by=owner)
    client = api_client_for(owner)
    # Jobs go to the ORM broker for the worker, not run in-process.
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": False}
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memory_site.settings",
        "MEMORY_DATABASE_NAME": connection.settings_dict["NAME"],
        "Q_SYNC": "false",
        "Q_WORKERS": "1",
        "Q_POLL": "0.2",
        "LOG_LEVEL": "WARNING",
    }
    cluster = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )
    try:
        conversation_id = client.post(
            "/api/ai/conversations", {"legacy_id": str(legacy.pk)}, format="json").json()["id"]
        for i in range(32):
            data = (
                {"role": "user", "content": f"Mom was a nurse in Dayton for {i + 10} years."}
                if i % 2 == 0 else
                {"role": "assistant", "content": "What else do you remember?"}
            )
            response = client.post(f"/api/ai/conversations/{conversation_id}/messages", data,
                                   format="json")
            assert response.status_code == 201

        def archived() -> bool:
            return client.get(f"/api/ai/conversations/{conversation_id}/chunks").json()["total"] == 1

        assert _wait_for(archived), "the worker did not archive messages 0-20"
        chunk = ConversationChunk.objects.get()
        assert (chunk.message_range_start, chunk.message_range_end) == (0, 20)
        assert LegacyFact.objects.filter(legacy=legacy, user=owner).exists()

        def summarised() -> bool:
            rows = client.get(f"/api/ai/conversations/{conversation_id}/memory?limit=200"
                              ).json()["memories"]
            return any(r["status"] == "completed" and r["end_sequence"] == 31 for r in rows)

        assert _wait_for(summarised)

        response = client.post(f"/api/ai/conversations/{conversation_id}/close")
        assert response.status_code == 200 and response.json()["status"] == "shutdown_clean"

        def tail_archived() -> bool:
            chunks = client.get(f"/api/ai/conversations/{conversation_id}/chunks").json()
            return [(c["message_range_start"], c["message_range_end"])
                    for c in chunks["chunks"]] == [(0, 20), (20, 32)]

        assert _wait_for(tail_archived)
    finally:
        os.killpg(cluster.pid, signal.SIGTERM)
        try:
            cluster.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(cluster.pid, signal.SIGKILL)
            cluster.wait(timeout=5)
