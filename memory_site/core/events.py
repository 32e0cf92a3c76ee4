"""Domain events for platforms' webhooks: a service publishes one inside its transaction, and
its deliveries are written in that transaction (memory_site.platforms.webhooks.fan_out), so they
commit with the write that published it or not at all; their deliver jobs are queued at commit.

The events (docs/webhooks.md): `facts.extracted`, `fact.superseded`, `summary.completed`,
`conversation.archived` and `user.erased`.

The platforms app registers, in its AppConfig.ready(), a receivers check
(`register_receivers_check`: an event that nobody can receive costs nothing more) and the
fan-out (`register_fan_out`). Without a fan-out registered, a fan-out job is queued by name at
commit, as before. This module never imports the platforms app (the layers in
docs/architecture.md).
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


# `fan_out(event)`: writes the event's deliveries (and queues their jobs at commit). None: a
# fan-out job is queued at commit instead.
FanOut = Callable[[dict[str, Any]], int]
_fan_out: FanOut | None = None


def register_receivers_check(check: ReceiversCheck | None) -> None:
    """Set (or, with None, remove) the check that tells whether an event has any receiver."""
    global _receivers_check
    _receivers_check = check


def register_fan_out(fan_out: FanOut | None) -> None:
    """Set (or, with None, remove) what writes an event's deliveries when it is published."""
    global _fan_out
    _fan_out = fan_out


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
    """The event of `user_id`, delivered once the current transaction commits (at once outside
    one); a rolled-back write publishes nothing. A no-op with WEBHOOKS_ENABLED off, and for an
    event with no receiver (`has_receivers`). `data` becomes JSON here (UUIDs and datetimes as
    strings).

    With a fan-out registered, the event's deliveries are written now, in the caller's
    transaction: no event is lost between a commit and a job the broker never took (a broker
    down at commit, a process gone in between); their deliver jobs are queued at commit, and
    webhooks.delivery_sweep queues again a delivery whose job was lost."""
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
    if _fan_out is not None:
        _fan_out_now(event, _fan_out)
        return
    # robust: a broker that fails to take the event never fails the write that published it.
    transaction.on_commit(lambda: _enqueue(event), robust=True)


def _fan_out_now(event: dict[str, Any], fan_out: FanOut) -> None:
    try:
        # A savepoint: a check or fan-out that fails leaves the caller's write as it was, to
        # commit, and the event to a job.
        with transaction.atomic():
            if has_receivers(event["user_id"], event["type"]):
                fan_out(event)
    except Exception:  # noqa: BLE001 - a failing fan-out never fails the publishing write
        logger.exception("Webhook fan-out of event %s failed; queueing it as a job", event["id"])
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
