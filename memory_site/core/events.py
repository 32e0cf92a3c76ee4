"""Domain events for platforms' webhooks: a service publishes one inside its transaction, and a
job (memory_site.platforms.webhooks.fan_out, enqueued by name on commit) delivers it.

The events (docs/webhooks.md): `facts.extracted`, `fact.superseded`, `summary.completed`,
`conversation.archived` and `user.erased`.

The platforms app registers a receivers check (`register_receivers_check`) in its
AppConfig.ready(): an event that nobody can receive queues no job at all. This module never
imports the platforms app (the layers in docs/architecture.md).
"""

import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone
from django_q.tasks import async_task

FAN_OUT_TASK = "memory_site.platforms.webhooks.fan_out"

FACTS_EXTRACTED = "facts.extracted"
SUMMARY_COMPLETED = "summary.completed"
CONVERSATION_ARCHIVED = "conversation.archived"
USER_ERASED = "user.erased"
FACT_SUPERSEDED = "fact.superseded"
EVENT_TYPES = (FACTS_EXTRACTED, SUMMARY_COMPLETED, CONVERSATION_ARCHIVED, USER_ERASED,
               FACT_SUPERSEDED)

logger = logging.getLogger(__name__)

# `check(user_id, event_type)`: False when no endpoint would get a delivery of that event of
# that user. None: every event is queued and the fan-out job decides.
ReceiversCheck = Callable[[int, str], bool]
_receivers_check: ReceiversCheck | None = None


def register_receivers_check(check: ReceiversCheck | None) -> None:
    """Set (or, with None, remove) the check that tells whether an event has any receiver."""
    global _receivers_check
    _receivers_check = check


def has_receivers(user_id: int, event_type: str) -> bool:
    """Whether an event of `user_id` may reach an endpoint: the registered check, True without
    one, and True if the check fails (the fan-out job then decides, as without a check)."""
    if _receivers_check is None:
        return True
    try:
        return bool(_receivers_check(user_id, event_type))
    except Exception:  # noqa: BLE001 - a failing check never drops an event
        logger.exception("Webhook receivers check failed; queueing the event's fan-out")
        return True


def publish(event_type: str, *, user_id: int, data: dict[str, Any]) -> None:
    """Queue the event of `user_id` once the current transaction commits (at once outside one);
    a rolled-back write publishes nothing. A no-op with WEBHOOKS_ENABLED off. At commit, an
    event with no receiver (`has_receivers`) queues no job. `data` becomes JSON here (UUIDs
    and datetimes as strings)."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"Unknown event type {event_type!r}")
    if not settings.WEBHOOKS_ENABLED:
        return
    event = {
        "id": str(uuid.uuid4()),
        "type": event_type,
        "created_at": timezone.now().isoformat(),
        "user_id": user_id,
        "data": json.loads(json.dumps(data, cls=DjangoJSONEncoder)),
    }
    # robust: a broker that fails to take the event never fails the write that published it.
    transaction.on_commit(lambda: _enqueue(event), robust=True)


def _enqueue(event: dict[str, Any]) -> None:
    if not has_receivers(event["user_id"], event["type"]):
        return
    # `sync` follows the settings at call time, as in conversations.queue. `save=False`: the
    # job's success is not kept as a result row (nothing reads it: its deliveries are rows of
    # their own, and saving one makes django-q2 read every saved success to prune them; an
    # archive publishes one or two events per batch). A failure is still saved.
    async_task(
        FAN_OUT_TASK, event, group="webhooks", task_name=f"event:{event['id']}",
        sync=bool(settings.Q_CLUSTER.get("sync", False)), save=False,
    )
