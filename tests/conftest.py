"""Shared fixtures: API clients per role around one legacy, on the real embedded PostgreSQL."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from facts.models import Legacy
from tests.factories import LegacyFactory, MembershipFactory, UserFactory

SCREENSHOTS = Path(__file__).resolve().parent.parent / "docs" / "screenshots"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--screenshots", action="store_true", default=False,
        help="let the browser tests write their screenshots into docs/screenshots/",
    )


@pytest.fixture(autouse=True)
def _fresh_rate_counts() -> None:
    """The rate limits count in the process's memory cache (memory_site.settings_test): every
    test starts from no count, so that the calls of the tests before it (refused anonymous
    calls count too) never throttle it."""
    cache.clear()


def api_client_for(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@dataclass
class Family:
    """One legacy with an owner and a fellow member, plus a stranger and a member of another legacy."""

    legacy: Legacy
    owner: User
    member: User
    stranger: User
    other_legacy: Legacy
    other_member: User


@pytest.fixture
def family(db) -> Family:
    owner = UserFactory(username="owner")
    member = UserFactory(username="member")
    legacy = LegacyFactory(name="Rose Whitfield", created_by=owner)
    MembershipFactory(legacy=legacy, user=member)
    other_owner = UserFactory(username="other")
    other_legacy = LegacyFactory(name="Walter Brandt", created_by=other_owner)
    stranger = UserFactory(username="stranger")
    return Family(
        legacy=legacy, owner=owner, member=member, stranger=stranger,
        other_legacy=other_legacy, other_member=other_owner,
    )


@pytest.fixture
def owner_client(family: Family) -> APIClient:
    return api_client_for(family.owner)


@pytest.fixture
def member_client(family: Family) -> APIClient:
    return api_client_for(family.member)


@pytest.fixture
def anon_client() -> APIClient:
    return APIClient()


@pytest.fixture
def openai_server():
    """A started FakeOpenAIServer (tests/support/openai_server.py) on 127.0.0.1; stopped
    afterwards."""
    from tests.support.openai_server import FakeOpenAIServer

    server = FakeOpenAIServer().start()
    yield server
    server.stop()


@pytest.fixture
def openai_llm(settings, openai_server):
    """The LLM provider set to `openai` against the fake server, without retries, so that a
    test scripts every answer the agent gets; returns the server."""
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = openai_server.base_url
    settings.LLM_MAX_RETRIES = 0
    settings.LLM_TIMEOUT_SECONDS = 10
    return openai_server


@pytest.fixture(scope="session")
def browser():
    """One headless Debian chromium for every browser test, driven by Playwright."""
    import os

    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

    # Playwright's sync API keeps an event loop in this thread; the tests' own ORM calls are
    # still synchronous and safe.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(scope="session")
def screenshots_dir(request: pytest.FixtureRequest) -> Path | None:
    """docs/screenshots/ when pytest runs with --screenshots; otherwise None, so that a test run
    never changes a tracked file."""
    if not request.config.getoption("--screenshots"):
        return None
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


@pytest.fixture
def save_screenshot(screenshots_dir: Path | None) -> Callable[..., Path | None]:
    """save_screenshot(page, "name.png") writes the full page into docs/screenshots/ with
    --screenshots and returns the path; without the option it takes no screenshot (None)."""

    def save(page, name: str) -> Path | None:
        if screenshots_dir is None:
            return None
        path = screenshots_dir / name
        page.screenshot(path=str(path), full_page=True)
        return path

    return save


@pytest.fixture(scope="session")
def redis_server():
    """Debian's redis-server on 127.0.0.1 at a free port for the session (`make test` installs
    it); its `url` is a REDIS_URL. Stopped at the end."""
    from tests.support.stack import RedisServer

    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_url(redis_server) -> str:
    """The session's Redis, emptied for this test."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    return redis_server.url
