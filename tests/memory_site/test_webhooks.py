"""Webhooks: a platform key registers, lists (a page) and removes its endpoints (secret shown
once, another platform's is a 404); the pipeline's events reach a local receiver signed, stamped
and with their id; a failing endpoint is retried with backoff, then failed, and never touches
the pipeline; no http(s), a port outside 1 to 65535, private addresses (also embedded in an IPv6
address) and redirects are refused, the field named once; users of no platform emit
nothing, and an event nobody can receive queues no fan-out job; a pending delivery whose job
was lost is sent by the sweep, and one with a job waiting is left to it."""

import ast
import hashlib
import hmac
import json
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml
from django.db import connection, transaction
from django.utils import timezone
from django_q.models import OrmQ, Schedule
from rest_framework.test import APIClient

from conversations.models import ConversationChunk
from conversations.services import conversation_catch_up
from facts.models import LegacyFact
from memory_site.core import events
from memory_site.platforms import webhooks
from memory_site.platforms.models import PlatformKey, WebhookDelivery, WebhookEndpoint
from memory_site.platforms.services import platform_key_create, platform_user_get_or_create
from memory_site.platforms.webhooks import DELIVER_TASK, deliver, delivery_sweep, fan_out
from tests.factories import ConversationFactory, LegacyFactory, UserFactory, import_messages
from tests.support.schema import assert_documented

pytestmark = pytest.mark.django_db

USER_LINES = [
    "Mom was a nurse at St. Mary's Hospital in Dayton.",
    "She loved gardening, especially her roses.",
    "Mom was born in 1931 in Ohio.",
]


class Receiver:
    """A local HTTP server that records every request and answers `status` (with `location`
    for a redirect)."""

    def __init__(self):
        self.requests: list[dict] = []
        self.status = 200
        self.location = ""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                self.send_response(receiver.status)
                if receiver.location:
                    self.send_header("Location", receiver.location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def events(self, event_type: str | None = None) -> list[dict]:
        return [
            r for r in self.requests
            if event_type is None or r["headers"]["X-Webhook-Event"] == event_type
        ]


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture(autouse=True)
def _webhook_settings(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = True
    settings.WEBHOOK_MAX_ATTEMPTS = 3
    settings.WEBHOOK_RETRY_BACKOFF_SECONDS = 10


def _client(key: str, user_id: str | None = None) -> APIClient:
    client = APIClient()
    headers = {"HTTP_AUTHORIZATION": f"Api-Key {key}"}
    if user_id is not None:
        headers["HTTP_X_USER_ID"] = user_id
    client.credentials(**headers)
    return client


@pytest.fixture
def platform():
    _, key = platform_key_create(name="chat-frontend")
    return key


def _register(key: str, url: str) -> dict:
    response = _client(key).post("/api/platform/webhooks", {"url": url}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _platform_conversation(key: str, external_id: str = "user-42"):
    platform = PlatformKey.objects.get_from_key(key).platform
    platform_user, _ = platform_user_get_or_create(platform=platform, external_id=external_id)
    legacy = LegacyFactory(name="Rose Whitfield", created_by=platform_user.user)
    conversation = ConversationFactory(legacy=legacy, user=platform_user.user)
    import_messages(conversation, (
        ("user", f"{USER_LINES[(i // 2) % len(USER_LINES)]} This was turn {i}.") if i % 2 == 0
        else ("assistant", "Thank you for sharing that.")
        for i in range(32)
    ))
    return conversation


def _catch_up(conversation, capture):
    with capture(execute=True):
        return conversation_catch_up(conversation=conversation)


def _signature_ok(request: dict, secret: str) -> bool:
    timestamp = request["headers"]["X-Webhook-Timestamp"]
    expected = hmac.new(
        secret.encode(), f"{timestamp}.".encode() + request["body"], hashlib.sha256
    ).hexdigest()
    return hmac.compare_digest(request["headers"]["X-Webhook-Signature"], f"sha256={expected}")


def _run_scheduled_retries() -> int:
    """What django-q2's scheduler does once the one-off retry schedules are due."""
    runs = 0
    while (due := Schedule.objects.filter(func=DELIVER_TASK).order_by("id").first()) is not None:
        due.delete()
        deliver(*ast.literal_eval(due.args))
        runs += 1
    return runs


def test_register_list_and_delete_endpoints_with_the_secret_shown_once(platform, receiver):
    created = _register(platform, receiver.url)
    endpoint = WebhookEndpoint.objects.get()
    assert created == {
        "id": endpoint.pk, "url": receiver.url, "active": True,
        "created_at": created["created_at"], "secret": endpoint.secret,
    }
    assert endpoint.secret.startswith("whsec_") and len(endpoint.secret) > 40
    listed = _client(platform).get("/api/platform/webhooks")
    assert listed.status_code == 200
    assert listed.json() == {
        "webhooks": [{"id": endpoint.pk, "url": receiver.url, "active": True,
                      "created_at": created["created_at"]}],
        "total": 1, "limit": 50, "offset": 0,
    }
    deleted = _client(platform).delete(f"/api/platform/webhooks/{endpoint.pk}")
    assert deleted.status_code == 204
    assert not WebhookEndpoint.objects.exists()


def test_another_platforms_endpoint_is_a_404_and_stays(platform, receiver):
    endpoint_id = _register(platform, receiver.url)["id"]
    _, other = platform_key_create(name="other-frontend")
    response = _client(other).delete(f"/api/platform/webhooks/{endpoint_id}")
    assert response.status_code == 404
    assert response.json() == {"detail": "No such webhook endpoint.", "code": "not_found"}
    assert _client(other).get("/api/platform/webhooks").json() == {
        "webhooks": [], "total": 0, "limit": 50, "offset": 0,
    }
    assert WebhookEndpoint.objects.filter(pk=endpoint_id).exists()


def test_only_a_platform_key_manages_webhooks(platform):
    user_token = APIClient()
    user_token.force_authenticate(UserFactory())
    response = user_token.post("/api/platform/webhooks", {"url": "http://example.org/"},
                               format="json")
    assert response.status_code == 403
    as_user = _client(platform, "user-42").get("/api/platform/webhooks")
    assert as_user.status_code == 200  # the key is the platform's, with or without X-User-Id
    assert not WebhookEndpoint.objects.exists()


def test_the_list_is_a_page_of_webhooks_with_a_total(platform, client):
    spec = yaml.safe_load(client.get("/api/schema").content)
    urls = [f"https://hooks{n}.example.org/" for n in range(3)]
    platform_row = PlatformKey.objects.get_from_key(platform).platform
    for url in urls:
        WebhookEndpoint.objects.create(platform=platform_row, url=url, secret="whsec_x")
    response = _client(platform).get("/api/platform/webhooks", {"limit": 2, "offset": 1})
    assert response.status_code == 200
    body = assert_documented(response, spec, "/api/platform/webhooks", "get")
    assert [endpoint["url"] for endpoint in body["webhooks"]] == urls[1:]
    assert (body["total"], body["limit"], body["offset"]) == (3, 2, 1)


PRIVATE = "The host resolves to a private, loopback, link-local or reserved address."


def _refused(response, message: str) -> None:
    """A 400 in the API's error format that names the field once, and nothing registered."""
    assert response.status_code == 400
    assert response.json() == {
        "detail": f"url: {message}", "code": "invalid", "errors": {"url": [message]},
    }
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1/", PRIVATE),
        ("http://169.254.169.254/latest/meta-data", PRIVATE),
        ("http://10.1.2.3:8080/", PRIVATE),
        ("http://[::1]/", PRIVATE),
        ("http://user:pw@example.org/", "The URL must not contain credentials."),
    ],
)
def test_private_addresses_are_refused_at_registration(platform, settings, url, message):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    response = _client(platform).post("/api/platform/webhooks", {"url": url}, format="json")
    _refused(response, message)


@pytest.mark.parametrize(
    "address",
    [
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2002:a01:203::1",  # 6to4 of 10.1.2.3
        "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
        "::ffff:127.0.0.1",  # IPv4-mapped
        "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "::127.0.0.1",  # IPv4-compatible
    ],
)
def test_an_ipv6_address_embedding_a_refused_ipv4_is_refused(platform, settings, address):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    response = _client(platform).post(
        "/api/platform/webhooks", {"url": f"http://[{address}]/hooks"}, format="json"
    )
    _refused(response, PRIVATE)


def test_an_ipv6_address_embedding_a_public_ipv4_is_accepted(platform, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    for url in ("http://[2002:808:808::1]/hooks", "http://[::ffff:8.8.8.8]/hooks"):
        assert _register(platform, url)["url"] == url
    assert WebhookEndpoint.objects.count() == 2


@pytest.mark.parametrize(
    "url", ["http://example.com:0/", "http://[2606:4700::1111]:0/", "http://example.com:65536/"]
)
def test_a_port_outside_1_to_65535_is_refused(platform, settings, url):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    response = _client(platform).post("/api/platform/webhooks", {"url": url}, format="json")
    _refused(response, "The port must be a number from 1 to 65535.")


def test_a_non_http_url_is_refused(platform):
    response = _client(platform).post(
        "/api/platform/webhooks", {"url": "ftp://example.org/hooks"}, format="json"
    )
    _refused(response, "Only http and https URLs are allowed.")


def test_archive_events_reach_the_receiver_signed(platform, receiver,
                                                  django_capture_on_commit_callbacks):
    secret = _register(platform, receiver.url)["secret"]
    conversation = _platform_conversation(platform)
    before = int(time.time())
    result = _catch_up(conversation, django_capture_on_commit_callbacks)
    assert len(result.chunks) == 1
    archived = receiver.events("conversation.archived")
    extracted = receiver.events("facts.extracted")
    assert len(archived) == 1 and len(extracted) == 1
    assert len(receiver.events("summary.completed")) == 1
    for request in receiver.requests:
        assert request["path"] == "/hooks"
        assert request["headers"]["Content-Type"] == "application/json"
        assert _signature_ok(request, secret)
        assert before <= int(request["headers"]["X-Webhook-Timestamp"]) <= time.time()
        body = json.loads(request["body"])
        assert body["id"] == request["headers"]["X-Webhook-Id"]
        assert body["type"] == request["headers"]["X-Webhook-Event"]
        assert body["user"] == {"external_id": "user-42"}
    chunk = ConversationChunk.objects.get()
    archived_body = json.loads(archived[0]["body"])
    assert archived_body["data"] == {
        "conversation_id": str(conversation.pk), "legacy_id": str(conversation.legacy_id),
        "message_range": [0, 20], "chunk_id": str(chunk.pk), "fully_archived": False,
    }
    facts = LegacyFact.objects.filter(source_conversation=conversation)
    extracted_data = json.loads(extracted[0]["body"])["data"]
    assert sorted(extracted_data["fact_ids"]) == sorted(str(f.pk) for f in facts)
    assert extracted_data["count"] == facts.count() > 0
    deliveries = WebhookDelivery.objects.all()
    assert {d.status for d in deliveries} == {"delivered"}
    assert all(d.attempts == 1 and d.last_status_code == 200 for d in deliveries)


def test_a_failing_endpoint_is_retried_with_backoff_then_failed(
    platform, receiver, django_capture_on_commit_callbacks
):
    receiver.status = 500
    _register(platform, receiver.url)
    conversation = _platform_conversation(platform)
    result = _catch_up(conversation, django_capture_on_commit_callbacks)
    # The pipeline's work is all there, whatever the endpoint answers.
    assert len(result.chunks) == 1 and not result.error
    assert ConversationChunk.objects.filter(conversation=conversation).count() == 1
    archived = WebhookDelivery.objects.get(event_type="conversation.archived")
    assert (archived.status, archived.attempts, archived.last_status_code) == ("pending", 1, 500)
    assert archived.last_error == "HTTP 500"
    wait = (archived.next_attempt_at - timezone.now()).total_seconds()
    assert 5 < wait <= 10
    retry = Schedule.objects.get(func=DELIVER_TASK, args=repr((archived.pk,)))
    assert retry.schedule_type == Schedule.ONCE and retry.next_run == archived.next_attempt_at
    sent = len(receiver.events("conversation.archived"))
    assert _run_scheduled_retries() == 2 * WebhookDelivery.objects.count()
    archived.refresh_from_db()
    assert (archived.status, archived.attempts, archived.next_attempt_at) == ("failed", 3, None)
    assert len(receiver.events("conversation.archived")) == sent + 2
    assert deliver(archived.pk) == "skipped"  # a failed delivery is left alone


def test_a_redirect_is_not_followed(platform, receiver, django_capture_on_commit_callbacks):
    target = Receiver()
    try:
        receiver.status, receiver.location = 302, target.url
        _register(platform, receiver.url)
        conversation = _platform_conversation(platform)
        _catch_up(conversation, django_capture_on_commit_callbacks)
        _run_scheduled_retries()
        assert target.requests == []
        delivery = WebhookDelivery.objects.get(event_type="conversation.archived")
        assert delivery.status == "failed"
        assert delivery.last_error == "redirect not followed (HTTP 302)"
    finally:
        target.server.shutdown()
        target.server.server_close()


def test_delivery_refuses_a_private_address_when_not_allowed(
    platform, receiver, settings, django_capture_on_commit_callbacks
):
    _register(platform, receiver.url)
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    conversation = _platform_conversation(platform)
    _catch_up(conversation, django_capture_on_commit_callbacks)
    assert receiver.requests == []
    delivery = WebhookDelivery.objects.get(event_type="conversation.archived")
    assert "private, loopback" in delivery.last_error


def test_delivery_refuses_an_ipv6_address_embedding_a_loopback_ipv4(
    platform, receiver, settings, django_capture_on_commit_callbacks
):
    _register(platform, receiver.url)
    # Registered before the rule: the check before each attempt refuses it all the same.
    WebhookEndpoint.objects.update(
        url=f"http://[2002:7f00:1::1]:{receiver.server.server_port}/hooks"
    )
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False
    conversation = _platform_conversation(platform)
    _catch_up(conversation, django_capture_on_commit_callbacks)
    assert receiver.requests == []
    delivery = WebhookDelivery.objects.get(event_type="conversation.archived")
    assert (delivery.status, delivery.last_error) == ("pending", f"WebhookUrlError: {PRIVATE}")


def test_users_of_no_platform_emit_nothing(platform, receiver, django_capture_on_commit_callbacks):
    _register(platform, receiver.url)
    person = UserFactory()
    conversation = ConversationFactory(
        legacy=LegacyFactory(name="Rose Whitfield", created_by=person), user=person
    )
    import_messages(conversation, (("user", f"{USER_LINES[0]} {i}") for i in range(32)))
    result = _catch_up(conversation, django_capture_on_commit_callbacks)
    assert len(result.chunks) == 1
    assert not WebhookDelivery.objects.exists()
    assert receiver.requests == []


def test_events_are_off_with_webhooks_disabled(platform, receiver, settings,
                                               django_capture_on_commit_callbacks):
    settings.WEBHOOKS_ENABLED = False
    _register(platform, receiver.url)
    _catch_up(_platform_conversation(platform), django_capture_on_commit_callbacks)
    assert not WebhookDelivery.objects.exists()


def test_erasing_a_platform_user_sends_user_erased(platform, receiver,
                                                   django_capture_on_commit_callbacks):
    secret = _register(platform, receiver.url)["secret"]
    _platform_conversation(platform)
    with django_capture_on_commit_callbacks(execute=True):
        response = _client(platform, "user-42").delete("/api/me/data")
    assert response.status_code == 200
    [request] = receiver.events("user.erased")
    assert _signature_ok(request, secret)
    body = json.loads(request["body"])
    assert body["user"] == {"external_id": "user-42"}
    assert body["data"]["erased"] == response.json()["erased"]


def test_a_retried_erase_keeps_the_first_erases_user_erased_on_its_way(
        platform, receiver, queued, django_capture_on_commit_callbacks):
    """A platform that retries DELETE /api/me/data (its first answer lost) must still learn of
    the erase: the retry erases the user's other deliveries, never a `user.erased` one, nor the
    job that sends it. Before, the retry deleted the first erase's pending delivery and its
    job, and the one event the platform most needs was never sent."""
    _register(platform, receiver.url)
    _platform_conversation(platform)
    client = _client(platform, "user-42")
    with django_capture_on_commit_callbacks(execute=True):
        assert client.delete("/api/me/data").status_code == 200
    [first] = WebhookDelivery.objects.filter(event_type="user.erased")
    assert first.status == "pending"
    assert [job["args"] for job in _queued(DELIVER_TASK)] == [(first.pk,)]
    with django_capture_on_commit_callbacks(execute=True):
        again = client.delete("/api/me/data")
    assert again.status_code == 200
    assert again.json()["erased"]["webhook_deliveries"] == 0
    assert again.json()["erased"]["jobs"] == 0
    assert WebhookDelivery.objects.get(pk=first.pk).status == "pending"
    assert sorted(job["args"] for job in _queued(DELIVER_TASK)) == sorted(
        (d.pk,) for d in WebhookDelivery.objects.filter(event_type="user.erased"))


def test_a_deleted_endpoint_gets_nothing_more(platform, receiver,
                                              django_capture_on_commit_callbacks):
    endpoint_id = _register(platform, receiver.url)["id"]
    assert _client(platform).delete(f"/api/platform/webhooks/{endpoint_id}").status_code == 204
    _catch_up(_platform_conversation(platform), django_capture_on_commit_callbacks)
    assert receiver.requests == [] and not WebhookDelivery.objects.exists()


def _queued(func: str) -> list[dict]:
    return [q.task for q in OrmQ.objects.all() if q.task["func"] == func]


@pytest.fixture
def queued(settings):
    """Jobs stay in the database queue instead of running in the process."""
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": False}


def test_an_event_nobody_can_receive_queues_no_job(platform, receiver, queued,
                                                   django_capture_on_commit_callbacks):
    key = PlatformKey.objects.get_from_key(platform)
    without_endpoint, _ = platform_user_get_or_create(platform=key.platform, external_id="u-1")
    of_no_platform = UserFactory()
    _, other_key = platform_key_create(name="other-frontend")
    _register(other_key, receiver.url)  # another platform's endpoint reaches neither user
    endpoint_id = _register(platform, receiver.url)["id"]
    WebhookEndpoint.objects.filter(pk=endpoint_id).update(active=False)
    with django_capture_on_commit_callbacks(execute=True):
        for user_id in (without_endpoint.user_id, of_no_platform.pk):
            for event_type in events.EVENT_TYPES:
                events.publish(event_type, user_id=user_id, data={"n": 1})
    assert _queued(events.FAN_OUT_TASK) == []
    assert not WebhookDelivery.objects.exists()
    assert receiver.requests == []


def test_an_event_with_a_receiver_is_written_with_the_write_that_published_it(
        platform, receiver, queued, django_capture_on_commit_callbacks):
    """Its delivery is a row of the publishing transaction (no fan-out job between the commit
    and the delivery); its deliver job is queued at commit; a rolled-back write leaves none."""
    key = PlatformKey.objects.get_from_key(platform)
    platform_user, _ = platform_user_get_or_create(platform=key.platform, external_id="u-1")
    endpoint_id = _register(platform, receiver.url)["id"]
    with pytest.raises(RuntimeError), transaction.atomic():
        events.publish(events.SUMMARY_COMPLETED, user_id=platform_user.user_id, data={"n": 0})
        assert WebhookDelivery.objects.count() == 1  # written in the transaction
        raise RuntimeError("the write fails")
    assert not WebhookDelivery.objects.exists()
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        events.publish(events.SUMMARY_COMPLETED, user_id=platform_user.user_id, data={"n": 1})
        delivery = WebhookDelivery.objects.get()
        assert _queued(DELIVER_TASK) == []  # nothing queued before the commit
    assert delivery.endpoint_id == endpoint_id and delivery.status == "pending"
    assert delivery.payload["user"] == {"external_id": "u-1"}
    assert delivery.payload["data"] == {"n": 1}
    assert _queued(events.FAN_OUT_TASK) == []
    assert [job["args"] for job in _queued(DELIVER_TASK)] == [(delivery.pk,)]


def test_a_broker_down_at_commit_loses_no_event(platform, receiver, settings, monkeypatch,
                                                django_capture_on_commit_callbacks):
    """The deliver job cannot be queued at commit: the delivery is there, pending, and the
    sweep sends it once the broker is back."""
    key = PlatformKey.objects.get_from_key(platform)
    platform_user, _ = platform_user_get_or_create(platform=key.platform, external_id="u-1")
    _register(platform, receiver.url)

    def broker_down(*args, **kwargs):
        raise ConnectionError("the broker is down")

    monkeypatch.setattr(webhooks, "async_task", broker_down)
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        events.publish(events.SUMMARY_COMPLETED, user_id=platform_user.user_id, data={"n": 1})
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, receiver.requests) == ("pending", 0, [])
    monkeypatch.undo()
    _overdue(delivery, settings, by_seconds=1)
    assert delivery_sweep() == {"enqueued": 1, "waiting": 0}
    delivery.refresh_from_db()
    assert delivery.status == "delivered"
    [sent] = receiver.requests
    assert json.loads(sent["body"])["data"] == {"n": 1}


def test_a_fan_out_that_fails_leaves_the_write_and_queues_a_job(
        platform, queued, monkeypatch, django_capture_on_commit_callbacks):
    key = PlatformKey.objects.get_from_key(platform)
    platform_user, _ = platform_user_get_or_create(platform=key.platform, external_id="u-1")
    _register(platform, "http://127.0.0.1:9/hooks")

    def failing_fan_out(event):
        fan_out(event)
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 / 0")  # the statement fails: the transaction is aborted

    monkeypatch.setattr(events, "_fan_out", failing_fan_out)
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        events.publish(events.SUMMARY_COMPLETED, user_id=platform_user.user_id, data={"n": 1})
        kept = UserFactory()  # the caller's transaction goes on
    assert type(kept).objects.filter(pk=kept.pk).exists()  # and commits
    # The failed fan-out's delivery was rolled back with its savepoint; a job will fan out.
    assert not WebhookDelivery.objects.exists()
    [job] = _queued(events.FAN_OUT_TASK)
    assert job["args"][0]["data"] == {"n": 1}


def test_a_fan_out_with_a_bug_never_fails_the_write(platform, queued, monkeypatch,
                                                   django_capture_on_commit_callbacks):
    key = PlatformKey.objects.get_from_key(platform)
    platform_user, _ = platform_user_get_or_create(platform=key.platform, external_id="u-1")
    _register(platform, "http://127.0.0.1:9/hooks")

    def buggy_fan_out(event):
        fan_out(event)
        raise KeyError("user")

    monkeypatch.setattr(events, "_fan_out", buggy_fan_out)
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        events.publish(events.SUMMARY_COMPLETED, user_id=platform_user.user_id, data={"n": 1})
        kept = UserFactory()
    assert type(kept).objects.filter(pk=kept.pk).exists()
    assert not WebhookDelivery.objects.exists()  # rolled back with its savepoint
    assert len(_queued(events.FAN_OUT_TASK)) == 1


def test_without_a_registered_check_or_fan_out_every_event_is_queued(
        platform, queued, monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr(events, "_receivers_check", None)
    monkeypatch.setattr(events, "_fan_out", None)
    person = UserFactory()
    with django_capture_on_commit_callbacks(execute=True):
        events.publish(events.FACTS_EXTRACTED, user_id=person.pk, data={"n": 1})
    [task] = _queued(events.FAN_OUT_TASK)
    assert task["args"][0]["user_id"] == person.pk


# --- The sweep: deliveries whose job was lost ------------------------------------------------


def _lost_delivery(platform: str, receiver: Receiver, capture) -> WebhookDelivery:
    """A pending delivery whose deliver job never reached the queue (the broker dropped it)."""
    key = PlatformKey.objects.get_from_key(platform)
    platform_user, _ = platform_user_get_or_create(platform=key.platform, external_id="u-1")
    _register(platform, receiver.url)
    event = {"id": "6f1c4d7e-0000-4000-8000-000000000001", "type": events.SUMMARY_COMPLETED,
             "created_at": timezone.now().isoformat(), "user_id": platform_user.user_id,
             "data": {"n": 1}}
    with capture(execute=False):  # its on-commit enqueue never runs
        assert fan_out(event) == 1
    return WebhookDelivery.objects.get()


def _overdue(delivery: WebhookDelivery, settings, by_seconds: int) -> None:
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        next_attempt_at=timezone.now() - timedelta(
            seconds=settings.WEBHOOK_SWEEP_GRACE_SECONDS + by_seconds))


def test_the_sweep_sends_a_delivery_whose_job_was_lost_once_past_the_grace(
        platform, receiver, settings, django_capture_on_commit_callbacks):
    delivery = _lost_delivery(platform, receiver, django_capture_on_commit_callbacks)
    # Inside the grace its job may only be late: nothing is queued.
    _overdue(delivery, settings, by_seconds=-60)
    assert delivery_sweep() == {"enqueued": 0, "waiting": 0}
    assert receiver.requests == []
    _overdue(delivery, settings, by_seconds=1)
    assert delivery_sweep() == {"enqueued": 1, "waiting": 0}
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 1)
    [sent] = receiver.requests
    assert sent["headers"]["X-Webhook-Id"] == str(delivery.event_id)
    assert delivery_sweep() == {"enqueued": 0, "waiting": 0}  # delivered: left alone


def test_the_sweep_queues_a_lost_delivery_once_per_grace(
        platform, receiver, settings, queued, django_capture_on_commit_callbacks):
    delivery = _lost_delivery(platform, receiver, django_capture_on_commit_callbacks)
    _overdue(delivery, settings, by_seconds=1)
    assert delivery_sweep() == {"enqueued": 1, "waiting": 0}
    [job] = _queued(DELIVER_TASK)
    assert job["args"] == (delivery.pk,) and job["name"] == f"webhook:{delivery.pk}"
    delivery.refresh_from_db()
    assert delivery.next_attempt_at > timezone.now() - timedelta(seconds=60)
    # Its job waits in the queue: even overdue again, it is not queued twice.
    _overdue(delivery, settings, by_seconds=1)
    assert delivery_sweep() == {"enqueued": 0, "waiting": 1}
    assert len(_queued(DELIVER_TASK)) == 1
    assert receiver.requests == []


def test_the_sweep_leaves_a_delivery_to_its_retry_schedule(
        platform, receiver, settings, django_capture_on_commit_callbacks):
    receiver.status = 500
    delivery = _lost_delivery(platform, receiver, django_capture_on_commit_callbacks)
    assert deliver(delivery.pk) == "pending"  # its retry is a one-off schedule
    assert Schedule.objects.filter(func=DELIVER_TASK).count() == 1
    _overdue(delivery, settings, by_seconds=1)  # the scheduler was down past the grace
    assert delivery_sweep() == {"enqueued": 0, "waiting": 1}
    assert len(receiver.requests) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("pending", 1)
    # The schedule ran and its job was lost with the worker: the sweep queues it.
    Schedule.objects.filter(func=DELIVER_TASK).delete()
    receiver.status = 200
    assert delivery_sweep() == {"enqueued": 1, "waiting": 0}
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)


def test_the_sweep_is_a_schedule_and_takes_at_most_a_batch(
        platform, receiver, settings, queued, django_capture_on_commit_callbacks):
    sweep = Schedule.objects.get(name="webhook delivery sweep")
    assert (sweep.func, sweep.schedule_type, sweep.minutes) == (
        "memory_site.platforms.webhooks.delivery_sweep", Schedule.MINUTES,
        settings.WEBHOOK_SWEEP_INTERVAL_MINUTES)
    delivery = _lost_delivery(platform, receiver, django_capture_on_commit_callbacks)
    failed = WebhookDelivery.objects.create(
        endpoint=delivery.endpoint, event_id="6f1c4d7e-0000-4000-8000-000000000002",
        event_type=delivery.event_type, payload=delivery.payload, status="failed")
    newer = WebhookDelivery.objects.create(
        endpoint=delivery.endpoint, event_id="6f1c4d7e-0000-4000-8000-000000000003",
        event_type=delivery.event_type, payload=delivery.payload)
    for row in (delivery, failed, newer):
        _overdue(row, settings, by_seconds=100 if row is delivery else 1)
    settings.WEBHOOK_SWEEP_BATCH = 1
    assert delivery_sweep() == {"enqueued": 1, "waiting": 0}  # the most overdue first
    assert [q.task["args"] for q in OrmQ.objects.all()] == [(delivery.pk,)]
    assert delivery_sweep() == {"enqueued": 1, "waiting": 0}
    assert sorted(q.task["args"] for q in OrmQ.objects.all()) == [(delivery.pk,), (newer.pk,)]
    failed.refresh_from_db()
    assert failed.status == "failed"
