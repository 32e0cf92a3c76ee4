"""Rate limits: 429 with Retry-After in the error format, per user, per model-calling endpoint
and per anonymous address; and counted across processes (two gunicorns sharing the cache)."""

import json
import urllib.error
import urllib.request

import pytest
from django.core.cache import cache
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from conversations.models import Message
from facts.models import Legacy
from tests.conftest import api_client_for
from tests.factories import ConversationFactory, LegacyFactory, UserFactory
from tests.support.stack import Gunicorn, stack_env


@pytest.fixture(autouse=True)
def _fresh_counts():
    """In-process, the counts are in a per-process memory cache: start each test from none."""
    cache.clear()


def _assert_throttled(response) -> None:
    assert response.status_code == 429
    body = response.json()
    assert set(body) == {"detail", "code"}
    assert body["code"] == "throttled"
    assert body["detail"].startswith("Request was throttled. Expected available in ")
    assert 1 <= int(response["Retry-After"]) <= 60


@pytest.mark.django_db
def test_every_api_call_of_a_user_counts_towards_the_user_rate(settings, family, owner_client,
                                                              member_client):
    settings.THROTTLE_RATE_USER = "3/minute"
    for _ in range(3):
        assert owner_client.get("/api/legacies").status_code == 200
    _assert_throttled(owner_client.get("/api/memory"))
    # Writes are refused before anything is written.
    response = owner_client.post("/api/legacies", {"name": "Walter"}, format="json")
    _assert_throttled(response)
    assert not Legacy.objects.filter(name="Walter").exists()
    # Another user has a count of their own.
    assert member_client.get("/api/legacies").status_code == 200


@pytest.mark.django_db
def test_turns_context_and_search_count_towards_the_turn_rate(settings, family, owner_client):
    settings.THROTTLE_RATE_TURN = "2/minute"
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    turn = f"/api/ai/conversations/{conversation.pk}/turn"
    assert owner_client.post(turn, {"content": "Mom loved peonies."}, format="json"
                             ).status_code == 201
    assert owner_client.get(f"/api/ai/conversations/{conversation.pk}/context").status_code == 200
    stored = Message.objects.filter(conversation=conversation).count()
    _assert_throttled(owner_client.post(turn, {"content": "And roses."}, format="json"))
    _assert_throttled(owner_client.get(f"/api/ai/legacies/{family.legacy.pk}/search?q=roses"))
    assert Message.objects.filter(conversation=conversation).count() == stored
    # Calls that reach no model go on: appending a message, the memory tools.
    response = owner_client.post(f"/api/ai/conversations/{conversation.pk}/messages",
                                 {"role": "user", "content": "She sang."}, format="json")
    assert response.status_code == 201
    assert owner_client.get("/api/tools").status_code == 200


@pytest.mark.django_db
def test_calls_without_credentials_count_per_address(settings, anon_client):
    settings.THROTTLE_RATE_ANON = "2/minute"
    for _ in range(2):
        assert anon_client.get("/api/schema?format=json").status_code == 200
    _assert_throttled(anon_client.get("/api/schema?format=json"))
    assert anon_client.get("/api/schema?format=json", REMOTE_ADDR="10.0.0.2").status_code == 200


@pytest.mark.django_db
def test_a_forwarded_for_header_is_no_new_address_without_proxies(settings, anon_client):
    """With NUM_PROXIES 0 (the default) the address is REMOTE_ADDR: X-Forwarded-For is the
    client's own claim, and reading it let each request count as a new address."""
    settings.THROTTLE_RATE_ANON = "2/minute"
    for n in range(2):
        assert anon_client.get("/api/schema?format=json",
                               HTTP_X_FORWARDED_FOR=f"10.9.0.{n}").status_code == 200
    _assert_throttled(anon_client.get("/api/schema?format=json",
                                      HTTP_X_FORWARDED_FOR="10.9.0.7"))


@pytest.mark.django_db
def test_refused_credentials_count_per_address(settings, family, anon_client):
    """DRF checks throttles after authentication and permissions: requests answered 401 were
    never counted, and a token could be guessed at any rate."""
    settings.THROTTLE_RATE_ANON = "3/minute"
    assert anon_client.get("/api/legacies").status_code == 401
    assert anon_client.get("/api/legacies", HTTP_AUTHORIZATION="Token wrong").status_code == 401
    assert anon_client.get("/api/legacies", HTTP_AUTHORIZATION="Token wrong2").status_code == 401
    _assert_throttled(anon_client.get("/api/legacies", HTTP_AUTHORIZATION="Token wrong3"))
    _assert_throttled(anon_client.get("/api/legacies"))
    # A caller with good credentials is not the anonymous address's count.
    assert api_client_for(family.owner).get("/api/legacies").status_code == 200


@pytest.mark.django_db
def test_a_platform_s_own_calls_count_per_platform(settings, anon_client):
    """A platform's calls with its key and no X-User-Id (provisioning its users) have no user:
    they were counted per address at THROTTLE_RATE_ANON, and a platform provisioning from one
    server was held to it."""
    from memory_site.platforms.services import platform_key_create

    settings.THROTTLE_RATE_ANON = "2/minute"
    settings.THROTTLE_RATE_USER = "2/minute"
    settings.THROTTLE_RATE_PLATFORM = "4/minute"
    _, key = platform_key_create(name="chat-frontend")
    _, other_key = platform_key_create(name="other-frontend")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    for n in range(4):
        response = client.post("/api/platform/users", {"external_id": f"user-{n}"}, format="json")
        assert response.status_code == 201, response.content
    _assert_throttled(client.post("/api/platform/users", {"external_id": "user-9"},
                                  format="json"))
    # Another platform has a count of its own, and so do anonymous callers of the address.
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_key}")
    assert other.post("/api/platform/users", {"external_id": "user-0"},
                      format="json").status_code == 201
    assert anon_client.get("/api/schema?format=json").status_code == 200


@pytest.mark.django_db
def test_a_platform_s_calls_for_its_users_count_per_platform_too(settings):
    """Each new X-User-Id is a new user with a count of its own: a key naming a new user at
    every call was never held back. All calls made with one key count per platform."""
    from memory_site.platforms.services import platform_key_create

    settings.THROTTLE_RATE_USER = "2/minute"
    settings.THROTTLE_RATE_PLATFORM = "5/minute"
    _, key = platform_key_create(name="chat-frontend")
    _, other_key = platform_key_create(name="other-frontend")

    def as_user(api_key: str, external_id: str):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key}", HTTP_X_USER_ID=external_id)
        return client.get("/api/legacies")

    assert as_user(key, "user-0").status_code == 200
    assert as_user(key, "user-0").status_code == 200
    _assert_throttled(as_user(key, "user-0"))  # the user's own count
    for n in range(1, 3):
        assert as_user(key, f"user-{n}").status_code == 200
    _assert_throttled(as_user(key, "user-3"))  # the platform's count: 5 calls let through
    assert as_user(other_key, "user-3").status_code == 200


@pytest.mark.django_db
def test_an_empty_rate_is_no_limit(settings, owner_client):
    settings.THROTTLE_RATE_USER = ""
    for _ in range(5):
        assert owner_client.get("/api/legacies").status_code == 200


def test_a_rate_that_does_not_parse_is_a_system_check_error(settings):
    from memory_site.checks import check_rate_limits

    assert check_rate_limits(None) == []
    settings.THROTTLE_RATE_TURN = "lots"
    assert [p.id for p in check_rate_limits(None)] == ["memory_site.E002"]


# --- across processes ---------------------------------------------------------------------------


def _get(url: str, token: str) -> tuple[int, dict, dict]:
    request = urllib.request.Request(url, headers={"Authorization": f"Token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("cache", ["database", "redis"])
def test_two_web_servers_share_one_count(request, cache):
    """Two gunicorns (two processes, one worker each) with THROTTLE_RATE_USER=6/minute,
    requests alternating between them: 6 pass in all, not 6 per process."""
    user = UserFactory()
    LegacyFactory(created_by=user)
    token = Token.objects.create(user=user).key
    extra = {"THROTTLE_RATE_USER": "6/minute"}
    if cache == "redis":
        extra["REDIS_URL"] = request.getfixturevalue("redis_url")
    env = stack_env(connection.settings_dict["NAME"], **extra)
    servers = [Gunicorn(env, workers=1, threads=1), Gunicorn(env, workers=1, threads=1)]
    try:
        for server in servers:
            server.start()
        statuses = []
        for n in range(14):
            status, headers, body = _get(f"{servers[n % 2].url}/api/legacies", token)
            statuses.append(status)
            if status == 429:
                assert body["code"] == "throttled" and int(headers["Retry-After"]) >= 1
        assert statuses == [200] * 6 + [429] * 8
    finally:
        for server in servers:
            server.stop()


@pytest.mark.django_db
def test_a_turn_through_the_test_client_is_not_throttled_by_default(family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    client = api_client_for(family.owner)
    for n in range(10):
        response = client.post(f"/api/ai/conversations/{conversation.pk}/turn",
                               {"content": f"Line {n} about Rose."}, format="json")
        assert response.status_code == 201
