"""The job queue on Redis (Q_BROKER=redis): the sweep sees which conversations have a job
waiting, and /healthz reports the broker; in processes of their own, as django-q2 reads its
broker once at import. The whole pipeline on Redis runs in tests/e2e/test_faults.py."""

import json
import subprocess
import sys

import pytest
from django.db import connection

from tests.support.stack import ROOT, stack_env

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = """
import json
from conversations.queue import enqueue_summarization, queued_summarizations
from memory_site.views import _check_queue
for conversation_id in ("c0ffee00-0000-4000-8000-000000000001",
                        "c0ffee00-0000-4000-8000-000000000002",
                        "c0ffee00-0000-4000-8000-000000000001"):
    enqueue_summarization(conversation_id=conversation_id)
print(json.dumps({"queued": sorted(queued_summarizations()), "health": _check_queue()}))
"""


def test_queued_summarizations_reads_the_waiting_jobs_on_redis(redis_url):
    env = stack_env(connection.settings_dict["NAME"], Q_BROKER="redis", REDIS_URL=redis_url)
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c", SCRIPT], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["queued"] == ["c0ffee00-0000-4000-8000-000000000001",
                                "c0ffee00-0000-4000-8000-000000000002"]
    assert answer["health"] == {"ok": True, "broker": "redis", "sync": False, "queued": 3,
                                "succeeded": 0, "failed": 0}
