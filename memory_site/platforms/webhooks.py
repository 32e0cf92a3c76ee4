"""Webhooks: the endpoint URL rules (http(s) only, public addresses only), the signature,
`fan_out` (an event to a delivery per endpoint of the user's platform, written with the write
that published the event) and the jobs `deliver` (one signed POST, retried with backoff) and
`delivery_sweep` (a pending delivery whose job was lost is queued again). Delivery is at least
once: receivers dedupe by X-Webhook-Id. See docs/webhooks.md."""

import hashlib
import hmac
import http.client
import ipaddress
import json
import logging
import socket
import time
from datetime import timedelta
from typing import Any
from urllib.parse import SplitResult, urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task, schedule

from memory_site.core.jobs import queued_ids
from memory_site.platforms.models import PlatformUser, WebhookDelivery, WebhookEndpoint

logger = logging.getLogger(__name__)

DELIVER_TASK = "memory_site.platforms.webhooks.deliver"
# One name per delivery, so that the sweep can tell which deliveries have a job queued.
DELIVER_TASK_NAME_PREFIX = "webhook:"
SIGNATURE_HEADER = "X-Webhook-Signature"
TIMESTAMP_HEADER = "X-Webhook-Timestamp"
ID_HEADER = "X-Webhook-Id"
EVENT_HEADER = "X-Webhook-Event"
USER_AGENT = "legacy-memory-webhooks/1"
# Enough of an answer to end the request cleanly; the body itself is not kept.
RESPONSE_READ_LIMIT = 64 * 1024


class WebhookUrlError(ValueError):
    """The URL is not one a webhook may be sent to."""


# IPv6 prefixes whose last 32 bits are an IPv4 address that a translator or the stack itself
# sends to: NAT64's well-known prefix and the deprecated IPv4-compatible addresses.
IPV4_SUFFIX_NETWORKS = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("::/96"))


def _public(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return not (
        ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved
        or ip.is_multicast or ip.is_unspecified or not ip.is_global
    )


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address leads to: 6to4's, Teredo's server and client, NAT64's
    and an IPv4-compatible address's."""
    embedded = [ip.sixtofour, *(ip.teredo or ())]
    if any(ip in network for network in IPV4_SUFFIX_NETWORKS):
        embedded.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return [address for address in embedded if address is not None]


def _address_allowed(address: str) -> bool:
    """Public, and so is every IPv4 address it embeds: `2002:7f00:1::1` (6to4) reaches
    127.0.0.1 through a relay as surely as `::ffff:127.0.0.1` does."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        # The mapped range itself counts as private: the IPv4 address is the one to judge.
        return _public(ip.ipv4_mapped)
    embedded = _embedded_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else []
    return _public(ip) and all(map(_public, embedded))


def _port(parts: SplitResult) -> int | None:
    """The URL's port, None when it names none. Port 0 would be the scheme's port at the check
    and no port at all when connecting: only 1 to 65535 are ports."""
    try:
        port = parts.port
    except ValueError:  # not a number, or above 65535
        port = -1
    if port is not None and not 1 <= port <= 65535:
        raise WebhookUrlError("The port must be a number from 1 to 65535.")
    return port


def webhook_url_resolve(url: str) -> str:
    """The address to connect to for `url`: http or https, a host, no credentials, a port from
    1 to 65535 if any, and (unless WEBHOOK_ALLOW_PRIVATE_ADDRESSES) every address the host
    resolves to public, and so every IPv4 address it embeds. Checked at registration and
    again before each attempt, and the request goes to the address checked, so a DNS answer
    that changes in between cannot point it inside the network."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise WebhookUrlError(f"Not a valid URL: {exc}.") from None
    if parts.scheme not in ("http", "https"):
        raise WebhookUrlError("Only http and https URLs are allowed.")
    if not parts.hostname:
        raise WebhookUrlError("The URL has no host.")
    if parts.username is not None or parts.password is not None:
        raise WebhookUrlError("The URL must not contain credentials.")
    port = _port(parts) or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise WebhookUrlError(f"The host {parts.hostname!r} could not be resolved.") from None
    addresses = [info[4][0] for info in infos]
    if not addresses:
        raise WebhookUrlError(f"The host {parts.hostname!r} could not be resolved.")
    if not settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES and not all(map(_address_allowed, addresses)):
        raise WebhookUrlError(
            "The host resolves to a private, loopback, link-local or reserved address."
        )
    return addresses[0]


def webhook_url_validate(url: str) -> str:
    """`url` if a webhook may be registered for it; ValidationError on the `url` field if not."""
    try:
        webhook_url_resolve(url)
    except WebhookUrlError as exc:
        raise ValidationError({"url": [str(exc)]}) from None
    return url


def webhook_signature(*, secret: str, timestamp: int, body: bytes) -> str:
    """`sha256=` and the hex HMAC-SHA256 of `<timestamp>.<body>` with the endpoint's secret."""
    message = f"{timestamp}.".encode() + body
    return "sha256=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def _post(*, url: str, body: bytes, headers: dict[str, str]) -> int:
    """POST to the checked address of `url`; redirects are never followed. The status code."""
    address = webhook_url_resolve(url)
    parts = urlsplit(url)
    connection_class = (
        http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    )
    connection = connection_class(
        parts.hostname, parts.port, timeout=settings.WEBHOOK_TIMEOUT_SECONDS
    )
    # The Host header and TLS (SNI, certificate) keep the name; the socket goes to the address.
    connection._create_connection = lambda where, *args, **kwargs: socket.create_connection(
        (address, where[1]), *args, **kwargs
    )
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        response.read(RESPONSE_READ_LIMIT)
        return response.status
    finally:
        connection.close()


def _enqueue_delivery(delivery_id: int) -> None:
    async_task(
        DELIVER_TASK, delivery_id, group="webhooks",
        task_name=f"{DELIVER_TASK_NAME_PREFIX}{delivery_id}",
        sync=bool(settings.Q_CLUSTER.get("sync", False)),
    )


def has_receivers(user_id: int, event_type: str) -> bool:
    """Whether `fan_out` would create a delivery for an event of `user_id`: the user is a
    platform's and that platform has an active endpoint (endpoints take every event type, so
    `event_type` does not narrow it). One EXISTS over the platform user's unique user id and
    the endpoints' platform index. Registered with memory_site.core.events in the app's
    ready(), so an event nobody can receive queues no fan-out job."""
    return WebhookEndpoint.objects.filter(active=True, platform__users__user_id=user_id).exists()


def fan_out(event: dict[str, Any]) -> int:
    """One pending delivery of `event` per active endpoint of the user's platform, each
    delivered by its own job, queued at commit. Called by memory_site.core.events.publish in
    the publishing transaction (registered in the app's ready()), or as a job (queued before
    that, or when the call failed). Nothing for a user who is not a platform's. Safe to run
    twice: an event has one delivery per endpoint. Returns how many deliveries it created."""
    platform_user = (
        PlatformUser.objects.select_related("platform").filter(user_id=event["user_id"]).first()
    )
    if platform_user is None:
        return 0
    endpoints = list(
        WebhookEndpoint.objects.filter(platform=platform_user.platform, active=True)
    )
    payload = {
        "id": event["id"],
        "type": event["type"],
        "created_at": event["created_at"],
        "user": {"external_id": platform_user.external_id},
        "data": event["data"],
    }
    created = []
    with transaction.atomic():
        for endpoint in endpoints:
            delivery, new = WebhookDelivery.objects.get_or_create(
                endpoint=endpoint, event_id=event["id"],
                defaults={"event_type": event["type"], "payload": payload,
                          "next_attempt_at": timezone.now()},
            )
            if new:
                created.append(delivery.pk)
        for delivery_id in created:
            transaction.on_commit(
                lambda delivery_id=delivery_id: _enqueue_delivery(delivery_id), robust=True
            )
    return len(created)


def _claim_attempt(delivery_id: int) -> WebhookDelivery | None:
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update().select_related("endpoint")
            .filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING).first()
        )
        if delivery is None:
            return None
        delivery.attempts += 1
        if not delivery.endpoint.active:
            delivery.status = WebhookDelivery.Status.FAILED
            delivery.last_error = "the endpoint was deactivated"
            delivery.next_attempt_at = None
        delivery.save(update_fields=["attempts", "status", "last_error", "next_attempt_at"])
    return delivery if delivery.status == WebhookDelivery.Status.PENDING else None


def deliver(delivery_id: int) -> str:
    """Job: one attempt of a pending delivery. A 2xx answer delivers it; anything else (another
    status, a redirect, a timeout, a refused address) is retried after WEBHOOK_RETRY_BACKOFF_SECONDS
    doubled per earlier attempt, by a one-off django-q2 schedule, until WEBHOOK_MAX_ATTEMPTS,
    then it has failed. Never raises for the endpoint's faults; a delivered or failed delivery
    is left alone. Returns the status."""
    delivery = _claim_attempt(delivery_id)
    if delivery is None:
        return "skipped"
    body = json.dumps(delivery.payload, separators=(",", ":"), ensure_ascii=False).encode()
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        ID_HEADER: str(delivery.event_id),
        EVENT_HEADER: delivery.event_type,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: webhook_signature(
            secret=delivery.endpoint.secret, timestamp=timestamp, body=body
        ),
    }
    status_code, error = None, ""
    try:
        status_code = _post(url=delivery.endpoint.url, body=body, headers=headers)
    except Exception as exc:  # noqa: BLE001 - whatever the endpoint does, the job records it
        error = f"{type(exc).__name__}: {exc}"
    if status_code is not None and 200 <= status_code < 300:
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=WebhookDelivery.Status.DELIVERED, last_status_code=status_code,
            last_error="", next_attempt_at=None, delivered_at=timezone.now(),
        )
        return WebhookDelivery.Status.DELIVERED
    if status_code is not None:
        error = f"redirect not followed (HTTP {status_code})" if 300 <= status_code < 400 else (
            f"HTTP {status_code}"
        )
    if delivery.attempts >= settings.WEBHOOK_MAX_ATTEMPTS:
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=WebhookDelivery.Status.FAILED, last_status_code=status_code,
            last_error=error[:300], next_attempt_at=None,
        )
        logger.warning("Webhook delivery %s failed after %d attempts: %s",
                       delivery.pk, delivery.attempts, error)
        return WebhookDelivery.Status.FAILED
    wait = settings.WEBHOOK_RETRY_BACKOFF_SECONDS * 2 ** (delivery.attempts - 1)
    next_attempt_at = timezone.now() + timedelta(seconds=wait)
    with transaction.atomic():
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            last_status_code=status_code, last_error=error[:300], next_attempt_at=next_attempt_at,
        )
        schedule(DELIVER_TASK, delivery.pk, schedule_type=Schedule.ONCE, repeats=-1,
                 next_run=next_attempt_at)
    logger.info("Webhook delivery %s attempt %d failed (%s); next at %s",
                delivery.pk, delivery.attempts, error, next_attempt_at)
    return WebhookDelivery.Status.PENDING


def _waiting(delivery_ids: list[int]) -> set[int]:
    """Those of the deliveries that have a job waiting: queued (on the ORM broker, or taken by a
    worker and not finished; on Redis, not taken yet) or a retry's one-off schedule."""
    queued = queued_ids(DELIVER_TASK_NAME_PREFIX)
    waiting = {pk for pk in delivery_ids if str(pk) in queued}
    # django-q2 keeps a schedule's positional arguments as the text of their tuple.
    by_args = {repr((pk,)): pk for pk in delivery_ids}
    waiting.update(
        by_args[args] for args in Schedule.objects.filter(func=DELIVER_TASK, args__in=by_args)
        .values_list("args", flat=True)
    )
    return waiting


def delivery_sweep() -> dict[str, int]:
    """Job (scheduled every WEBHOOK_SWEEP_INTERVAL_MINUTES): the deliveries' safety net. A
    pending delivery whose attempt is overdue by WEBHOOK_SWEEP_GRACE_SECONDS and has no job
    waiting for it lost its job (a broker that dropped it or never took it, a worker gone
    mid-attempt); it is queued again, oldest first, at most WEBHOOK_SWEEP_BATCH a run, and its
    next attempt is set to now, so that a later sweep waits the grace again before queueing it
    once more. An attempt that was only late may then be made twice (at least once: receivers
    dedupe by X-Webhook-Id). Returns how many were queued and how many had a job waiting."""
    now = timezone.now()
    overdue = list(
        WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING,
            next_attempt_at__lte=now - timedelta(seconds=settings.WEBHOOK_SWEEP_GRACE_SECONDS),
        ).order_by("next_attempt_at", "pk").values_list("pk", flat=True)
        [:settings.WEBHOOK_SWEEP_BATCH]
    )
    if not overdue:
        return {"enqueued": 0, "waiting": 0}
    waiting = _waiting(overdue)
    lost = [pk for pk in overdue if pk not in waiting]
    WebhookDelivery.objects.filter(pk__in=lost, status=WebhookDelivery.Status.PENDING).update(
        next_attempt_at=now
    )
    for delivery_id in lost:
        _enqueue_delivery(delivery_id)
    if lost:
        logger.warning("Webhook sweep: %d overdue deliveries queued again (%d had a job waiting)",
                       len(lost), len(waiting))
    return {"enqueued": len(lost), "waiting": len(waiting)}
