"""A call run in a thread of its own, on its own database connection, for race tests."""

import threading
from collections.abc import Callable
from typing import Any

from django.db import connection


def in_thread(target: Callable[[], Any]) -> tuple[threading.Thread, dict]:
    """Start `target` in a thread; the dict gets its "result", or the "error" it raised (for
    the test to assert on). The thread's connection is closed when it ends."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = target()
        except BaseException as exc:  # re-raised by the test
            outcome["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome
