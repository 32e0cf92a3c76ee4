"""Erasing a user's data (DELETE /api/me/data) while one of their conversations is being archived:
the erase waits for the batch under way, then takes what it wrote along; neither side dies of a
deadlock, and nothing of the user is left."""

import threading
import time

import pytest
from django.db import connection

from conversations import services as conversations_services
from conversations import tasks
from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message
from conversations.services import summarization
from facts.models import LegacyFact
from memory_site.privacy.services import user_data_erase
from tests.factories import ConversationFactory, import_messages

LINES = [
    "Rose loved fishing at the lake cabin every summer.",
    "Rose was a nurse at St. Mary's Hospital in Dayton.",
    "Rose was born in 1931 in Ohio.",
]


def _talk(conversation: Conversation, count: int) -> None:
    import_messages(conversation, (
        ("user", f"{LINES[(i // 2) % len(LINES)]} This was turn {i}.") if i % 2 == 0
        else ("assistant", "Thank you for telling me. What else do you remember?")
        for i in range(count)
    ))


def _in_thread(target) -> tuple[threading.Thread, dict]:
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = target()
        except BaseException as exc:  # re-raised by the test
            outcome["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("others", [0, 1], ids=["one conversation", "and an older one"])
def test_an_erase_waits_for_an_archive_insert_under_way_and_takes_it_along(
    family, monkeypatch, others
):
    """The archive batch holds its conversation's row lock (and, by then, has written its
    chunk, whose key names the user) when the erase comes. Before the fix, the erase held the
    user's row and waited for the conversation, while the batch's next insert waited for the
    user's row: PostgreSQL killed one of them as a deadlock."""
    for _ in range(others):
        _talk(ConversationFactory(user=family.owner, legacy=family.legacy), 4)
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    _talk(conversation, 40)
    inserting, release = threading.Event(), threading.Event()
    create = ConversationChunk.objects.create

    def create_then_wait(**fields):
        chunk = create(**fields)
        inserting.set()
        release.wait(timeout=10)
        return chunk

    monkeypatch.setattr(ConversationChunk.objects, "create", create_then_wait)
    job, job_outcome = _in_thread(lambda: tasks.summarize_conversation(str(conversation.pk)))
    assert inserting.wait(timeout=10)
    eraser, erased = _in_thread(lambda: user_data_erase(user=family.owner))
    time.sleep(0.5)
    assert not erased  # waiting for the batch
    release.set()
    job.join(timeout=20)
    eraser.join(timeout=20)

    assert "error" not in job_outcome, job_outcome["error"]
    assert "error" not in erased, erased["error"]
    assert job_outcome["result"]["chunks"] == [[0, 20]]
    assert erased["result"]["conversations"] == 1 + others
    assert erased["result"]["chunks"] == 1 and erased["result"]["facts"] > 0
    assert not Conversation.objects.filter(user=family.owner).exists()
    assert not Message.objects.exists()
    assert not ConversationMemory.objects.exists()
    assert not ConversationChunk.objects.exists()
    assert not LegacyFact.objects.filter(user=family.owner).exists()


@pytest.mark.django_db(transaction=True)
def test_an_archive_batch_that_comes_during_an_erase_waits_and_stores_nothing(
    family, monkeypatch
):
    """The other order: the erase holds the user's row when the batch's insert comes. The
    batch waits for it and then finds its conversation gone; before the fix it locked the
    conversation first and the two deadlocked."""
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    _talk(conversation, 40)
    summarization.conversation_catch_up(conversation=conversation)  # the rolling summary
    ConversationChunk.objects.all().delete()  # the archive batch is due again
    LegacyFact.objects.all().delete()
    locked, release = threading.Event(), threading.Event()
    erase = conversations_services.user_data_erase

    def wait_then_erase(**kwargs):
        locked.set()  # the user's row is held (memory_site.privacy.services)
        release.wait(timeout=10)
        return erase(**kwargs)

    monkeypatch.setattr(conversations_services, "user_data_erase", wait_then_erase)
    eraser, erased = _in_thread(lambda: user_data_erase(user=family.owner))
    assert locked.wait(timeout=10)
    job, job_outcome = _in_thread(
        lambda: summarization.chunk_archive_range(conversation=conversation, start=0, end=20))
    time.sleep(0.5)
    release.set()
    eraser.join(timeout=20)
    job.join(timeout=20)

    assert "error" not in erased, erased["error"]
    assert isinstance(job_outcome.get("error"), summarization.ConversationGone)
    assert erased["result"]["conversations"] == 1 and erased["result"]["chunks"] == 0
    assert not Conversation.objects.exists()
    assert not ConversationChunk.objects.exists()
    assert not LegacyFact.objects.filter(user=family.owner).exists()
