"""No N+1: the query count of the main pages and endpoints does not grow with the rows shown."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent_memory.services import memory_create, place_add
from conversations.services import message_append
from tests.conftest import api_client_for
from tests.factories import (
    ConversationFactory,
    LegacyFactFactory,
    LegacyFactory,
    MembershipFactory,
)

pytestmark = pytest.mark.django_db


def _add_rows(family, conversation, label: str, count: int) -> None:
    for n in range(count):
        memory_create(user=family.owner, content=f"{label} memory {n} about Rose",
                      category="context", subject=f"{label}{n}")
        LegacyFactFactory(legacy=family.legacy, user=family.owner,
                          content=f"Rose {label} fact {n} about the garden")
        LegacyFactFactory(legacy=family.legacy, user=family.member, visibility="shared",
                          content=f"Rose {label} shared fact {n} about the lake")
        place_add(user=family.owner, place_id=f"{label}{n}", name=f"{label} place {n}")
        message_append(conversation=conversation, role="user", content=f"{label} line {n}.")
        ConversationFactory(user=family.owner, legacy=family.legacy)
        MembershipFactory(legacy=LegacyFactory(), user=family.owner)


def test_query_counts_do_not_grow_with_the_rows_shown(family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    client = api_client_for(family.owner)
    client.force_login(family.owner)
    urls = [
        f"/api/ai/conversations/{conversation.pk}/context",
        f"/api/ai/conversations/{conversation.pk}/checkpoint",
        f"/api/ai/conversations/{conversation.pk}/messages",
        "/api/ai/conversations",
        "/api/legacies",
        f"/api/ai/legacies/{family.legacy.pk}/facts",
        "/api/memory",
        "/api/memory/document",
        f"/legacies/{family.legacy.pk}/facts",
        "/memories",
    ]

    def counts() -> dict[str, int]:
        result = {}
        for url in urls:
            with CaptureQueriesContext(connection) as queries:
                assert client.get(url).status_code == 200, url
            result[url] = len(queries)
        return result

    _add_rows(family, conversation, "early", 2)
    few = counts()
    _add_rows(family, conversation, "late", 8)
    assert counts() == few
