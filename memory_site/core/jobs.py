"""What is waiting in django-q2's queue, read back by task name: the sweeps queue a job again
only for work that has none waiting (conversations.tasks, memory_site.platforms.webhooks)."""

from django_q.brokers import get_broker
from django_q.brokers.redis_broker import Redis as RedisBroker
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.signing import BadSignature, SignedPackage


def queued_task_names() -> list[object]:
    """The names of the jobs in the queue. On the ORM broker: waiting or taken by a worker and
    not yet finished (the broker deletes the row when the job is done). On Redis: waiting only,
    as a worker pops a job off the list when it takes it. The payloads are signed pickles, so
    each one is decoded for its name."""
    if Conf.ORM:
        return [package.name() for package in OrmQ.objects.using(Conf.ORM).only("payload")]
    broker = get_broker()
    if isinstance(broker, RedisBroker):
        names = []
        for payload in broker.connection.lrange(broker.list_key, 0, -1):
            try:
                names.append(SignedPackage.loads(payload).get("name"))
            except (BadSignature, AttributeError, TypeError):
                continue
        return names
    return []


def queued_ids(prefix: str) -> set[str]:
    """What follows `prefix` in the names of the queued jobs named so (a conversation's or a
    delivery's id): the jobs that name one thing each are named `<prefix><id>`."""
    return {name.removeprefix(prefix) for name in queued_task_names()
            if isinstance(name, str) and name.startswith(prefix)}
