"""Seed 001's memory document, token budget and eviction, and concurrent writers."""

import json
import logging
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agent_memory import selectors, services
from agent_memory.models import AgentMemory, Place
from agent_memory.serializers import MemoryDocumentSerializer, document_token_count
from memory_site.core.ai import count_tokens
from tests.conftest import api_client_for
from tests.factories import ConversationFactory, MessageFactory, UserFactory
from tests.support.prompt import memory_block


def _tokens_without(user, *memory_ids):
    memories = [m for m in selectors.document_memories(user) if m.pk not in memory_ids]
    return document_token_count(memories=memories, places=list(selectors.document_places(user)))


def document_of(user) -> dict:
    """Seed 001's memory document as the API answers it."""
    return MemoryDocumentSerializer(selectors.memory_document(user)).data


def _make(user, content, category="context", days_ago=0):
    memory = services.memory_create(user=user, content=content, category=category)
    AgentMemory.objects.filter(pk=memory.pk).update(
        created_at=timezone.now() - timedelta(days=days_ago)
    )
    return memory


@pytest.mark.django_db
def test_the_document_is_derived_from_the_rows(alice):
    conversation = ConversationFactory(user=alice, legacy__created_by=alice)
    message = MessageFactory(conversation=conversation, sequence=0)
    kept = services.memory_create(user=alice, content="User's name is Alex", category="context",
                                  source_conversation=conversation, source_message=message)
    dropped = services.memory_create(user=alice, content="User lives in Seattle",
                                     category="context")
    services.memory_delete(user=alice, memory=dropped)
    place, _ = services.place_add(user=alice, place_id="home", name="Home", notes="Main St",
                                  conversation=conversation, message=message)
    services.memory_create(user=UserFactory(username="bob"), content="Bob's own fact",
                           category="context")

    response = api_client_for(alice).get("/api/memory/document")
    assert response.status_code == 200
    document = response.json()
    kept_row = selectors.memory_for_user(user=alice, memory_id=kept.pk)
    dropped_row = selectors.memory_for_user(user=alice, memory_id=dropped.pk)
    mention = place.mentions.get()
    assert document["facts"] == [
        {
            "id": kept.pk, "content": "User's name is Alex",
            "added_at": kept_row.created_at.isoformat(),
            "source_conversation_id": str(conversation.pk),
            "source_message_id": str(message.pk), "is_active": True,
            "category": "context", "subject": None, "version": 1,
            "updated_at": kept_row.updated_at.isoformat(), "deactivated_at": None,
        },
        {
            "id": dropped.pk, "content": "User lives in Seattle",
            "added_at": dropped_row.created_at.isoformat(),
            "source_conversation_id": None, "source_message_id": None, "is_active": False,
            "category": "context", "subject": None, "version": 1,
            "updated_at": dropped_row.updated_at.isoformat(),
            "deactivated_at": dropped_row.deleted_at.isoformat(),
        },
    ]
    assert document["placer_user_datapoints"] == [{
        "place_id": "home", "place_name": "Home", "notes": "Main St",
        "mentioned_in": {str(conversation.pk): [[str(message.pk),
                                                 mention.mentioned_at.isoformat()]]},
        "added_at": place.added_at.isoformat(),
    }]
    assert document["metadata"] == {
        "last_updated": mention.mentioned_at.isoformat(),
        "total_facts": 2,
        "total_active_facts": 1,
        "total_pois": 1,
        # Tokens of the facts and places as they are answered, the metadata left out.
        "token_count": count_tokens(json.dumps(
            {"facts": document["facts"], "placer_user_datapoints": document["placer_user_datapoints"]},
            ensure_ascii=False, sort_keys=True,
        )),
        "schema_version": "1.0",
    }
    assert document["metadata"]["token_count"] > 50


@pytest.mark.django_db
def test_eviction_takes_deactivated_memories_first_then_the_oldest(alice, settings, caplog):
    oldest = _make(alice, "The oldest active memory of all", days_ago=30)
    deleted = _make(alice, "A memory that was deactivated later", days_ago=1)
    services.memory_delete(user=alice, memory=deleted)
    middle = _make(alice, "A middle-aged active memory here", days_ago=10)
    newest = _make(alice, "The newest memory, just added", days_ago=0)

    settings.MEMORY_TOKEN_LIMIT = _tokens_without(alice, deleted.pk)
    with caplog.at_level(logging.WARNING, logger="agent_memory.services"):
        evicted = services.memory_enforce_token_limit(user=alice, protected_ids={newest.pk})
    assert evicted == [deleted.pk]
    assert f"Evicted 1 memories for user {alice.pk} due to token limit" in caplog.text
    assert deleted.pk in caplog.text

    settings.MEMORY_TOKEN_LIMIT = _tokens_without(alice, oldest.pk)
    assert services.memory_enforce_token_limit(user=alice, protected_ids={newest.pk}) == [
        oldest.pk
    ]
    settings.MEMORY_TOKEN_LIMIT = 1
    assert services.memory_enforce_token_limit(user=alice, protected_ids={newest.pk}) == [
        middle.pk
    ]
    assert "still over the token limit" in caplog.text
    rows = {m.pk: m for m in AgentMemory.objects.filter(user=alice)}
    assert rows[newest.pk].evicted_at is None and rows[newest.pk].deleted_at is None
    for memory_id in (deleted.pk, oldest.pk, middle.pk):
        assert rows[memory_id].evicted_at is not None
        assert rows[memory_id].deleted_at is not None
    # Evicted memories leave the document, the list and the context; the owner keeps the history.
    assert [f["id"] for f in document_of(alice)["facts"]] == [newest.pk]
    assert [m.pk for m in selectors.active_memories_for_user(alice)] == [newest.pk]
    assert oldest.pk not in memory_block(alice)
    history = api_client_for(alice).get(f"/api/memory/{oldest.pk}").json()
    assert history["evicted_at"] is not None
    assert [v["content"] for v in history["versions"]] == ["The oldest active memory of all"]


@pytest.mark.django_db
def test_under_the_limit_nothing_is_evicted(alice, caplog):
    memory = _make(alice, "A short memory text")
    with caplog.at_level(logging.WARNING):
        assert services.memory_enforce_token_limit(user=alice) == []
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert AgentMemory.objects.get(pk=memory.pk).evicted_at is None


@pytest.mark.django_db
def test_an_add_over_the_limit_evicts_others_but_never_itself(alice, settings, caplog):
    old = _make(alice, "An old memory to be evicted", days_ago=5)
    settings.MEMORY_TOKEN_LIMIT = 1
    with caplog.at_level(logging.WARNING, logger="agent_memory.services"):
        response = api_client_for(alice).post(
            "/api/memory", {"content": "A brand new memory", "category": "person"}, format="json"
        )
    assert response.status_code == 201
    new_id = response.json()["id"]
    assert AgentMemory.objects.get(pk=new_id).deleted_at is None
    assert AgentMemory.objects.get(pk=old.pk).evicted_at is not None
    assert "token limit (" in caplog.text and old.pk in caplog.text


@pytest.mark.django_db
def test_a_write_scope_protects_everything_its_request_added(alice, settings):
    settings.MEMORY_TOKEN_LIMIT = 1
    with services.memory_write_scope() as added:
        first = services.memory_create(user=alice, content="First memory of the turn",
                                       category="context")
        second = services.memory_create(user=alice, content="Second memory of the turn",
                                        category="context")
        services.place_add(user=alice, place_id="home", name="Home")
    assert added == {first.pk, second.pk}
    assert AgentMemory.objects.filter(user=alice, deleted_at__isnull=True).count() == 2
    # Outside the scope, the older one is fair game again.
    third = services.memory_create(user=alice, content="A memory of a later turn",
                                   category="context")
    active = set(AgentMemory.objects.filter(user=alice, deleted_at__isnull=True)
                 .values_list("pk", flat=True))
    assert active == {third.pk}
    assert Place.objects.filter(user=alice).count() == 1


def _in_threads(*targets):
    barrier = threading.Barrier(len(targets))
    results: list = [None] * len(targets)

    def run(index, target):
        try:
            barrier.wait()
            results[index] = target()
        except Exception as exc:  # collected and asserted by the test
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, t)) for i, t in enumerate(targets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_adds_both_survive():
    user = UserFactory(username="racer")
    results = _in_threads(
        lambda: services.memory_create(user=user, content="Added by the first writer",
                                       category="context"),
        lambda: services.memory_create(user=user, content="Added by the second writer",
                                       category="person"),
    )
    assert all(isinstance(r, AgentMemory) for r in results), results
    document = document_of(user)
    assert sorted(f["content"] for f in document["facts"]) == [
        "Added by the first writer", "Added by the second writer",
    ]
    assert document["metadata"]["total_active_facts"] == 2


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_adds_of_one_subject_give_one_memory_and_one_conflict():
    user = UserFactory(username="racer")
    results = _in_threads(*[
        (lambda n=n: services.memory_create(user=user, content=f"Alec is the boss, take {n}",
                                            category="person", subject="Alec"))
        for n in range(2)
    ])
    assert sorted(type(r).__name__ for r in results) == ["AgentMemory", "SubjectConflict"]
    assert AgentMemory.objects.filter(user=user, subject="Alec").count() == 1
