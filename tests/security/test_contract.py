"""The API keeps its contract: schemathesis, with its default checks and phases (examples,
coverage, fuzzing, stateful), against a live server, as a user with a family, conversations,
facts and memories; then as a platform key acting for one of its users; then the erase
(`DELETE /api/me/data`), last, because it takes the caller's token with it.

The suite's run is bounded (CONTRACT_MAX_EXAMPLES cases per operation, 5 by default, and a
fixed seed); `make contract` runs the same test with more (README, docs/security.md)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache
from rest_framework.authtoken.models import Token

from agent_memory.selectors import memory_for_user
from conversations.models import Conversation
from memory_site.platforms.models import Platform
from memory_site.platforms.services import platform_key_create, platform_user_get_or_create
from tests.conftest import api_client_for
from tests.factories import ConversationFactory, LegacyFactory, MessageFactory
from tests.support.world import build_world

pytestmark = pytest.mark.django_db(transaction=True)

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
MAX_EXAMPLES = int(os.environ.get("CONTRACT_MAX_EXAMPLES", "5"))
SEED = os.environ.get("CONTRACT_SEED", "20240614")
RUN_TIMEOUT_SECONDS = int(os.environ.get("CONTRACT_RUN_TIMEOUT", "900"))
ERASE = "me_data_destroy"


def _schemathesis(name: str, base_url: str, headers: list[str], workdir: Path, *filters: str,
                  max_examples: int = MAX_EXAMPLES) -> subprocess.CompletedProcess:
    command = [
        str(SCHEMATHESIS), "run", f"{base_url}/api/schema",
        "--url", base_url,
        "--max-examples", str(max_examples),
        "--seed", SEED,
        "--workers", "1",
        "--request-timeout", "30",
        "--generation-database", "none",
        # The API reads JSON as UTF-8: no lone surrogates, which a JSON decoder pairs up and
        # the schema's patterns would count apart.
        "--generation-codec", "utf-8",
        "--no-color",
        *filters,
    ]
    for header in headers:
        command += ["--header", header]
    # The report also goes to a file (CONTRACT_OUTPUT_DIR, default the test's tmp_path), to
    # follow a long run while it runs.
    output = Path(os.environ.get("CONTRACT_OUTPUT_DIR", workdir)) / f"schemathesis-{name}.txt"
    with output.open("w") as stream:
        finished = subprocess.run(
            command, cwd=workdir, stdout=stream, stderr=subprocess.STDOUT, text=True,
            timeout=RUN_TIMEOUT_SECONDS, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "120"},
        )
    return subprocess.CompletedProcess(command, finished.returncode, output.read_text(), "")


def _report(name: str, result: subprocess.CompletedProcess) -> str:
    return f"\n===== {name}: exit {result.returncode} =====\n{result.stdout[-15000:]}{result.stderr[-3000:]}"


@pytest.fixture
def world(family, settings):
    # Thousands of requests in a minute: the per-user limit would answer most of them with a
    # (documented) 429 and leave the rest of the API untested.
    settings.THROTTLE_RATE_USER = ""
    settings.THROTTLE_RATE_TURN = ""
    settings.THROTTLE_RATE_ANON = ""
    settings.THROTTLE_RATE_PLATFORM = ""
    cache.clear()
    return build_world(family)


@pytest.fixture
def platform_headers(db) -> list[str]:
    """A platform key and one of its users with a legacy and a conversation."""
    _, key = platform_key_create(name="contract-platform")
    platform = Platform.objects.get(name="contract-platform")
    platform_user, _ = platform_user_get_or_create(platform=platform, external_id="ext-ada")
    legacy = LegacyFactory(name="Ada Lind", created_by=platform_user.user)
    conversation = ConversationFactory(legacy=legacy, user=platform_user.user)
    MessageFactory(conversation=conversation, role="user", content="Ada kept bees.")
    return [f"Authorization: Api-Key {key}", "X-User-Id: ext-ada"]


def test_the_api_keeps_its_contract(live_server, world, platform_headers, tmp_path):
    token = Token.objects.get_or_create(user=world.family.owner)[0].key
    runs = [
        ("token", _schemathesis("token", live_server.url, [f"Authorization: Token {token}"], tmp_path,
                                "--exclude-operation-id", ERASE)),
        # The key's own path through authentication, on every operation: fuzzing and stateful
        # (the token run covers the schema's boundaries). Creating a webhook is left out: its
        # URL must resolve to public addresses, which no schema can say (docs/security.md).
        ("platform key", _schemathesis("platform", live_server.url, platform_headers, tmp_path,
                                       "--exclude-operation-id", ERASE,
                                       "--exclude-operation-id", "platform_webhooks_create",
                                       "--phases", "fuzzing,stateful",
                                       max_examples=max(1, MAX_EXAMPLES // 2))),
        ("erase", _schemathesis("erase", live_server.url, [f"Authorization: Token {token}"], tmp_path,
                                "--include-operation-id", ERASE, max_examples=2)),
    ]
    failed = [_report(name, result) for name, result in runs if result.returncode != 0]
    assert not failed, "".join(failed)


def test_a_deleted_memory_answers_200_inactive_and_is_in_no_list(world):
    """The documented answer for a soft-deleted memory (GET /api/memory/{id}): 200 with
    `is_active: false` and `deleted_at`; not in the list; PUT and DELETE are 404s."""
    client = api_client_for(world.family.owner)
    deleted = world.deleted_memory
    detail = client.get(f"/api/memory/{deleted.pk}")
    assert detail.status_code == 200
    body = detail.json()
    assert (body["is_active"], body["deleted_at"] is not None) == (False, True)
    listed = client.get("/api/memory").json()
    assert [item["id"] for item in listed["memories"]] == [world.memory.pk]
    assert client.put(f"/api/memory/{deleted.pk}", {"content": "again"}, format="json"
                      ).status_code == 404
    assert client.delete(f"/api/memory/{deleted.pk}").status_code == 404
    assert memory_for_user(user=world.family.owner, memory_id=deleted.pk).versions.count() == 1
    assert Conversation.objects.filter(user=world.family.owner).count() == 1
