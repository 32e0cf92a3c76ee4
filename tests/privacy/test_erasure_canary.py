"""The erasure canary (issue 14): a canary word planted in every kind of text a user can create,
and in what the service keeps beside it (sessions, job-queue rows, webhook deliveries, login
records, the admin's log, the cache), is in no text, varchar or JSON column of any table after
DELETE /api/me/data, while a fellow member's canary, planted the same way, is all still there.
"""

import uuid
from dataclasses import dataclass

import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import OrmQ
from django_q.monitor import save_task
from django_q.tasks import async_task

from agent_memory.services import place_add
from conversations.models import Conversation
from conversations.queue import SUMMARIZE_TASK, enqueue_summarization
from memory_site.core import events
from memory_site.platforms.models import Platform, PlatformUser, WebhookEndpoint
from tests.conftest import api_client_for
from tests.factories import ConversationMemoryFactory, UserFactory
from tests.privacy.search import ENCODED, hits, text_columns
from tests.support.chunks import chunk_for

pytestmark = pytest.mark.django_db

ANN = "ANNCANARY4b7e"
BOB = "BOBCANARY9d21"

# Where a planted canary must show up before the erase: the test plants in every one of them.
PLANTED = {
    ("facts_legacy", "name"),
    ("facts_legacyfact", "content"),
    ("conversations_conversation", "title"),
    ("conversations_conversation", "persona"),
    ("conversations_message", "content"),
    ("conversations_message", "idempotency_key"),
    ("conversations_conversationmemory", "memory_text"),
    ("conversations_conversationmemory", "error"),
    ("conversations_conversationchunk", "content"),
    ("agent_memory_agentmemory", "subject"),
    ("agent_memory_agentmemoryversion", "content"),
    ("agent_memory_place", "name"),
    ("agent_memory_place", "notes"),
    ("django_session", "session_data (decoded)"),
    ("django_q_ormq", "payload (decoded)"),
    ("django_q_task", "result (decoded)"),
    ("platforms_webhookdelivery", "payload"),
    ("axes_accesslog", "user_agent"),
    ("axes_accessattempt", "user_agent"),
}


@dataclass
class Planted:
    conversation_id: str
    fact_ids: list[str]


@pytest.fixture
def canary_settings(settings, openai_llm):
    # The cache in its database table, so that the search reads what the API wrote there;
    # jobs queued, not run, on the real database broker.
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache",
                                   "LOCATION": "memory_site_cache"}}
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": False}
    settings.WEBHOOKS_ENABLED = True
    return openai_llm


def _event(user, canary: str) -> dict:
    return {
        "id": str(uuid.uuid4()), "type": events.FACTS_EXTRACTED,
        "created_at": timezone.now().isoformat(), "user_id": user.pk,
        "data": {"facts": [{"content": f"{canary} grew dahlias"}]},
    }


def plant(*, user, canary: str, legacy, endpoint, openai_llm,
          django_capture_on_commit_callbacks) -> Planted:
    """Every kind of text `user` can create, each holding `canary`, through the API and the
    dashboard where they make it, and the service's traces of them."""
    api = api_client_for(user)
    assert api.post("/api/legacies", {"name": f"{canary} solo"}, format="json").status_code == 201
    conversation = api.post("/api/ai/conversations", {
        "legacy_id": str(legacy.pk), "title": f"{canary} title", "persona": f"{canary} persona",
    }, format="json")
    assert conversation.status_code == 201, conversation.content
    conversation_id = conversation.json()["id"]
    messages_url = f"/api/ai/conversations/{conversation_id}/messages"
    sent = api.post(messages_url, {"role": "user", "content": f"{canary} message"},
                    format="json", HTTP_IDEMPOTENCY_KEY=f"{canary}-key")
    assert sent.status_code == 201, sent.content
    fact_ids = []
    for content in (f"{canary} grew dahlias", f"{canary} kept bees"):
        fact = api.post(f"/api/ai/legacies/{legacy.pk}/facts",
                        {"category": "hobby", "content": content, "visibility": "shared"},
                        format="json")
        assert fact.status_code == 201, fact.content
        fact_ids.append(fact.json()["id"])
    memory = api.post("/api/memory", {"content": f"{canary} memory one", "category": "person",
                                      "subject": f"{canary} subject"}, format="json")
    assert memory.status_code == 201, memory.content
    updated = api.put(f"/api/memory/{memory.json()['id']}",
                      {"content": f"{canary} memory two"}, format="json")
    assert updated.status_code == 200, updated.content
    # Places are the agent's to add (its add_poi tool, in a turn): the service that tool calls.
    place_add(user=user, place_id=f"{canary}-kew", name=f"{canary} Kew", notes=f"{canary} notes")

    # What the pipeline writes from the conversation: a summary (one that failed, with the
    # provider's words) and an archived chunk.
    conversation_row = Conversation.objects.get(pk=conversation_id)
    ConversationMemoryFactory(conversation=conversation_row, memory_text=f"{canary} summary",
                              start_sequence=0, end_sequence=0, status="failed",
                              error=f"LLMError: upstream said {canary}")
    chunk_for(conversation_row, 0, 1, f"{canary} chunk")

    # A turn that failed at the provider, whose error echoes the user's text.
    openai_llm.error(500, f"upstream echoed: {canary} turn")
    failed = api.post(f"/api/ai/conversations/{conversation_id}/turn",
                      {"content": f"{canary} turn"}, format="json")
    assert failed.status_code == 502
    assert canary not in failed.content.decode()

    # The dashboard: /memory answered on the chat page without JavaScript is parked in the
    # session for the next page view; and a second device signed in through the login page.
    web = Client()
    web.force_login(user)
    parked = web.post(f"/chat/{conversation_id}/send", {"content": "/memory"})
    assert parked.status_code == 302
    device = Client(HTTP_USER_AGENT=f"{canary} browser")
    assert device.post("/accounts/login/", {"username": user.username,
                                            "password": "pw-for-tests"}).status_code == 302
    # And a failed sign-in in another browser: the login brake records it.
    Client(HTTP_USER_AGENT=f"{canary} browser").post(
        "/accounts/login/", {"username": user.username, "password": "wrong"})

    # The job queue: a summarisation and an event queued (not run) on the database broker,
    # a success and a failure saved as a worker saves them. The user is a platform's with an
    # endpoint, or the event would queue nothing.
    PlatformUser.objects.create(platform=endpoint.platform, external_id=f"ext-{user.pk}",
                                user=user)
    enqueue_summarization(conversation_id=conversation_id)
    with django_capture_on_commit_callbacks(execute=True):
        # A webhook delivery of the user's event, with its payload, written with the publishing
        # write; its deliver job is queued at commit.
        events.publish(events.FACTS_EXTRACTED, user_id=user.pk,
                       data={"facts": [{"content": f"{canary} grew dahlias"}]})
    # An event's fan-out queued as a job, with the event in its payload (as when the fan-out
    # in the publishing transaction failed).
    async_task(events.FAN_OUT_TASK, _event(user, canary), group="webhooks", sync=False, save=False)
    now = timezone.now()
    for success, result in ((True, {"conversation_id": conversation_id,
                                    "error": f"LLMError: upstream said {canary}"}),
                            (False, f"LLMError: upstream echoed {canary} (Traceback …)")):
        save_task({
            "id": uuid.uuid4().hex, "name": f"summarize:{conversation_id}",
            "func": SUMMARIZE_TASK, "args": (conversation_id,), "kwargs": {},
            "started": now, "stopped": now, "result": result, "success": success,
            "group": "conversation-memory",
        }, get_broker())

    return Planted(conversation_id=conversation_id, fact_ids=fact_ids)


def test_nothing_of_the_erased_user_is_left_in_any_column_and_a_fellow_member_keeps_all(
    family, canary_settings, admin_client, django_capture_on_commit_callbacks
):
    ann, bob = family.owner, family.member
    platform = Platform.objects.create(name="frontend")
    endpoint = WebhookEndpoint.objects.create(platform=platform, url="https://hooks.example.org/",
                                              secret="s" * 32)
    planted = {
        user: plant(user=user, canary=canary, legacy=family.legacy, endpoint=endpoint,
                    openai_llm=canary_settings,
                    django_capture_on_commit_callbacks=django_capture_on_commit_callbacks)
        for user, canary in ((ann, ANN), (bob, BOB))
    }
    # Staff deleted one of each one's facts in the admin: the log keeps the row's kind and id.
    for user in (ann, bob):
        response = admin_client.post("/admin/facts/legacyfact/", {
            "action": "delete_facts", "_selected_action": [planted[user].fact_ids[1]]})
        assert response.status_code == 302

    ann_before, bob_before = hits(ANN), hits(BOB)
    assert set(ann_before) >= PLANTED, sorted(PLANTED - set(ann_before))
    assert set(bob_before) >= PLANTED, sorted(PLANTED - set(bob_before))
    assert not {key for key in ann_before if key[0] == "django_admin_log"}
    ann_conversation = planted[ann].conversation_id
    assert hits(ann_conversation)[("django_q_ormq", "payload (decoded)")] == 1
    sessions_before = Session.objects.count()

    response = api_client_for(ann).delete("/api/me/data")

    assert response.status_code == 200, response.content
    erased = response.json()["erased"]
    assert (erased["sessions"], erased["webhook_deliveries"], erased["login_records"]) == (2, 1, 3)
    # Queued: the summarisation, the event's fan-out and its delivery; saved: the success and
    # the failure.
    assert erased["jobs"] == 5
    assert hits(ANN) == {}
    assert hits(BOB) == bob_before
    # The queue and the sessions no longer name the erased user's conversation either.
    assert not {key for key in hits(ann_conversation)
                if key[0] in {"django_q_ormq", "django_q_task", "django_session"}}
    assert hits(planted[bob].conversation_id)[("django_q_ormq", "payload (decoded)")] == 1
    assert OrmQ.objects.count() == 3
    assert Session.objects.count() == sessions_before - 2
    # Nothing stops support deleting the account now.
    ann.delete()


def test_the_search_reads_every_table_and_decodes_every_encoded_column(db):
    columns = text_columns()
    tables = {table for table, _ in columns}
    assert {table for table, _ in ENCODED} <= tables
    assert {"django_admin_log", "django_q_schedule", "axes_accesslog", "authtoken_token",
            "platforms_webhookdelivery", "facts_legacyfact", "auth_user"} <= tables
    assert len(columns) >= 80


def test_a_user_with_nothing_planted_leaves_no_canary_to_find(family):
    # The search itself finds nothing that is not there (a canary nobody planted).
    UserFactory(username="nobody")
    assert hits("NEVERPLANTEDCANARY") == {}
