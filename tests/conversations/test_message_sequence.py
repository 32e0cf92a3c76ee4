"""Sequence numbers stay gap-free and unique when appends race from threads."""

import threading

import pytest
from django.db import connection

from conversations.models import Message
from conversations.services import message_append
from tests.factories import ConversationFactory


@pytest.mark.django_db(transaction=True)
def test_twenty_racing_appends_get_sequences_zero_to_nineteen():
    conversation = ConversationFactory()
    barrier = threading.Barrier(20)
    errors: list[BaseException] = []

    def append(n: int) -> None:
        try:
            barrier.wait(timeout=10)
            message_append(conversation=conversation, role="user", content=f"message {n}")
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=append, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert errors == []
    sequences = sorted(
        Message.objects.filter(conversation=conversation).values_list("sequence", flat=True)
    )
    assert sequences == list(range(20))
    contents = set(Message.objects.filter(conversation=conversation).values_list("content", flat=True))
    assert contents == {f"message {n}" for n in range(20)}
    conversation.refresh_from_db()
    assert conversation.message_count == 20
