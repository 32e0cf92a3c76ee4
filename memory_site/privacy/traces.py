"""What a user leaves outside the apps' own tables, and how an erase removes it: their Django
sessions, the job queue's rows that name their conversations or events (queued jobs, successes
and failures, webhook retry schedules), the webhook deliveries of their events, and the login
brake's records of their username. Called by privacy.services.user_data_erase inside its
transaction; docs/privacy.md lists what goes and what stays.
"""

import ast
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django_q.brokers import get_broker
from django_q.brokers.redis_broker import Redis as RedisBroker
from django_q.models import OrmQ, Schedule, Task
from django_q.signing import BadSignature, SignedPackage

from memory_site.core import events
from memory_site.platforms.models import PlatformUser, WebhookDelivery
from memory_site.platforms.webhooks import DELIVER_TASK, DELIVER_TASK_NAME_PREFIX


@dataclass
class UserTraces:
    """How the queue's rows name one user: their conversations' ids, their webhook deliveries
    (by id, as the deliver job and its retry schedules take them, and by event id) and their
    user id (every event names it). Collect it before the conversations are erased."""

    user_id: int
    markers: frozenset[str]
    delivery_ids: frozenset[int] = field(default_factory=frozenset)

    def mentioned_in(self, value: Any) -> bool:
        """Whether a job's name, arguments or result (decoded) names the user: a string that
        contains one of the markers, or an event of theirs (a dict with their `user_id`)."""
        if isinstance(value, str):
            return any(marker in value for marker in self.markers)
        if isinstance(value, uuid.UUID):
            return str(value) in self.markers
        if isinstance(value, dict):
            if value.get("user_id") == self.user_id:
                return True
            return any(self.mentioned_in(k) or self.mentioned_in(v) for k, v in value.items())
        if isinstance(value, list | tuple | set | frozenset):
            return any(self.mentioned_in(item) for item in value)
        if isinstance(value, BaseException):
            return self.mentioned_in(str(value))
        return False


def user_traces(*, user: AbstractBaseUser, conversation_ids: Iterable[object]) -> UserTraces:
    deliveries = _deliveries_of(user)
    delivery_ids = frozenset(deliveries.values_list("pk", flat=True))
    markers = {str(pk) for pk in conversation_ids}
    markers.update(f"{DELIVER_TASK_NAME_PREFIX}{pk}" for pk in delivery_ids)
    markers.update(str(event_id) for event_id in deliveries.values_list("event_id", flat=True))
    return UserTraces(user_id=user.pk, markers=frozenset(markers), delivery_ids=delivery_ids)


def _deliveries_of(user: AbstractBaseUser):
    """The deliveries of the user's events, but for the `user.erased` of an earlier erase: a
    platform that retries the erase (its first answer lost) must still be told of it, and that
    event holds nothing the user wrote (the counts, and the external id the platform keeps)."""
    platform_user = PlatformUser.objects.filter(user=user).first()
    if platform_user is None:
        return WebhookDelivery.objects.none()
    return WebhookDelivery.objects.filter(
        endpoint__platform_id=platform_user.platform_id,
        payload__user__external_id=platform_user.external_id,
    ).exclude(event_type=events.USER_ERASED)


def sessions_erase(*, user: AbstractBaseUser) -> int:
    """Every Django session signed in as the user, on every device (the one of this request
    too), with whatever it held: the chat page parks /memory replies there. Sessions are
    stored in the database (SESSION_ENGINE's default) and have no user column, so each is
    decoded."""
    store = import_module(settings.SESSION_ENGINE).SessionStore
    session_model = store.get_model_class()
    theirs = [
        session.pk for session in session_model.objects.iterator()
        if str(store().decode(session.session_data).get("_auth_user_id")) == str(user.pk)
    ]
    deleted, _ = session_model.objects.filter(pk__in=theirs).delete()
    return deleted


def jobs_erase(*, traces: UserTraces) -> int:
    """The queue's rows that name the user: jobs still queued (on the database broker, or on
    Redis once the erase commits), saved successes and failures, and the schedules that would
    retry a webhook delivery of theirs. Their payloads are pickles, so each is decoded."""
    queued = [
        row.pk for row in OrmQ.objects.all()
        if traces.mentioned_in(_decoded_package(row.payload))
    ]
    OrmQ.objects.filter(pk__in=queued).delete()
    done = [
        task.pk for task in Task.objects.all()
        if traces.mentioned_in([task.name, task.args, task.kwargs, task.result])
    ]
    Task.objects.filter(pk__in=done).delete()
    retries = [
        schedule.pk for schedule in Schedule.objects.filter(func=DELIVER_TASK)
        if _schedule_delivery_id(schedule) in traces.delivery_ids
    ]
    Schedule.objects.filter(pk__in=retries).delete()
    transaction.on_commit(lambda: _redis_jobs_erase(traces))
    return len(queued) + len(done) + len(retries)


def _decoded_package(payload: str | bytes) -> Any:
    try:
        return SignedPackage.loads(payload)
    except (BadSignature, ValueError, TypeError, AttributeError):
        return None


def _schedule_delivery_id(schedule: Schedule) -> object:
    try:
        args = ast.literal_eval(schedule.args or "()")
    except (ValueError, SyntaxError):
        return None
    args = args if isinstance(args, tuple) else (args,)
    return args[0] if args else None


def _redis_jobs_erase(traces: UserTraces) -> None:
    if settings.Q_BROKER != "redis":
        return
    broker = get_broker()
    if not isinstance(broker, RedisBroker):
        return
    for payload in broker.connection.lrange(broker.list_key, 0, -1):
        if traces.mentioned_in(_decoded_package(payload)):
            broker.connection.lrem(broker.list_key, 0, payload)


def webhook_deliveries_erase(*, traces: UserTraces) -> int:
    """The user's webhook deliveries with their payloads, pending ones too: an event of the
    user's is not sent after their erase (the `user.erased` event, whose delivery the erase
    writes after these, is)."""
    deleted, _ = WebhookDelivery.objects.filter(pk__in=traces.delivery_ids).delete()
    return deleted


def login_records_erase(*, user: AbstractBaseUser) -> int:
    """The login brake's records of the username (django-axes: failed attempts, and the log of
    sign-ins and failures, with addresses and browsers)."""
    username = user.get_username()
    return sum(
        model.objects.filter(username=username).delete()[0]
        for model in (AccessAttempt, AccessLog, AccessFailureLog)
    )
