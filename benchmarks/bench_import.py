"""Benchmark of `manage.py import_conversations`: one history of N messages through the command.

Not a test. It creates a throwaway database on the embedded server (or DATABASE_URL), writes a
one-line JSONL file for a member of a new legacy, runs the command (checking the file, batches
of IMPORT_MAX_BATCH with the progress bar; the archive job is only queued), runs it again
(everything skipped), prints the times and drops the database:

    .venv/bin/python benchmarks/bench_import.py --messages 10000
"""

import argparse
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings_test")


def run(*, messages: int) -> str:
    """The command's own time: the summarisation job it enqueues is queued, not run (the test
    settings would run it in-process, and catching the archive up is the worker's time)."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import override_settings

    from conversations.models import Message
    from facts.services import legacy_create

    user = get_user_model().objects.create_user(username=f"bench-import-{time.time_ns()}")
    legacy = legacy_create(user=user, name="Bench legacy")
    line = {"username": user.username, "legacy_id": str(legacy.pk), "title": "Bench", "messages": [
        {"role": "user" if i % 2 == 0 else "assistant",
         "content": f"Mom planted {i} tulips in Dayton in 1950." if i % 2 == 0 else "Lovely."}
        for i in range(messages)
    ]}
    lines = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.jsonl"
        path.write_text(json.dumps(line) + "\n")
        for label in ("import", "re-run"):
            out = io.StringIO()
            started = time.perf_counter()
            with override_settings(Q_CLUSTER={**settings.Q_CLUSTER, "sync": False}):
                call_command("import_conversations", str(path), stdout=out,
                             stderr=io.StringIO())
            seconds = time.perf_counter() - started
            lines.append(f"{label}: {seconds:.2f} s ({messages / seconds:,.0f} messages/s)")
            lines.append(f"  {out.getvalue().splitlines()[-1]}")
    stored = Message.objects.filter(conversation__user=user).count()
    return "\n".join([f"messages={messages} stored={stored}", *lines])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=10000)
    args = parser.parse_args()
    os.environ.setdefault("MEMORY_TEST_DB", "bench_import")

    import django

    django.setup()
    from django.db import connection

    original_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        print(run(messages=args.messages))
    finally:
        connection.creation.destroy_test_db(original_name, verbosity=0)


if __name__ == "__main__":
    main()
