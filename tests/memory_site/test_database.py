"""Models and database constraints of the foundation: the database itself enforces the seeds' rules."""

import pytest
from django.db import IntegrityError, connection, transaction

from conversations.models import ConversationChunk, ConversationMemory, Message
from tests.factories import ConversationChunkFactory, ConversationFactory, MessageFactory

pytestmark = pytest.mark.django_db


def _chunk(conversation, start: int, end: int, embedding=None) -> ConversationChunk:
    return ConversationChunkFactory(
        conversation=conversation,
        content=f"summary {start}-{end}",
        embedding=embedding or [0.0] * 1023 + [1.0],
        message_range_start=start,
        message_range_end=end,
    )


def test_a_second_processing_memory_is_rejected_by_the_database():
    conversation = ConversationFactory()
    ConversationMemory.objects.create(
        conversation=conversation, start_sequence=0, end_sequence=5, status="processing"
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        ConversationMemory.objects.create(
            conversation=conversation, start_sequence=0, end_sequence=7, status="processing"
        )
    # Completed and failed rows are not limited, and other conversations are independent.
    ConversationMemory.objects.create(
        conversation=conversation, start_sequence=0, end_sequence=3, status="completed"
    )
    ConversationMemory.objects.create(
        conversation=conversation, start_sequence=0, end_sequence=3, status="failed"
    )
    ConversationMemory.objects.create(
        conversation=ConversationFactory(), start_sequence=0, end_sequence=5, status="processing"
    )
    assert ConversationMemory.objects.filter(status="processing").count() == 2


def test_a_chunk_range_is_unique_per_conversation():
    conversation = ConversationFactory()
    _chunk(conversation, 0, 20)
    with pytest.raises(IntegrityError), transaction.atomic():
        _chunk(conversation, 0, 20)
    _chunk(conversation, 20, 40)
    _chunk(ConversationFactory(), 0, 20)
    assert ConversationChunk.objects.count() == 3


def test_a_message_sequence_is_unique_per_conversation():
    conversation = ConversationFactory()
    MessageFactory(conversation=conversation, sequence=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        MessageFactory(conversation=conversation, sequence=0)
    assert Message.objects.filter(conversation=conversation).count() == 1


def test_an_unknown_message_role_is_rejected_by_the_database():
    with pytest.raises(IntegrityError), transaction.atomic():
        MessageFactory(role="wizard")


def test_a_vector_round_trips_and_is_searchable_by_cosine_distance():
    from pgvector.django import CosineDistance

    conversation = ConversationFactory()
    vector = [((i * 37) % 101) / 101.0 for i in range(1024)]
    chunk = _chunk(conversation, 0, 20, embedding=vector)
    loaded = ConversationChunk.objects.get(pk=chunk.pk)
    assert len(loaded.embedding) == 1024
    assert [round(float(v), 5) for v in loaded.embedding] == [round(v, 5) for v in vector]
    nearest = ConversationChunk.objects.annotate(d=CosineDistance("embedding", vector)).get()
    assert nearest.d == pytest.approx(0.0, abs=1e-6)


def test_the_hnsw_cosine_index_and_the_seed_indexes_exist():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s",
            [ConversationChunk._meta.db_table],
        )
        indexes = dict(cursor.fetchall())
    assert "USING hnsw (embedding vector_cosine_ops)" in indexes["ix_conversation_chunks_embed"]
    assert "m='16'" in indexes["ix_conversation_chunks_embed"]
    assert "ef_construction='64'" in indexes["ix_conversation_chunks_embed"]
    assert ("(user_id, legacy_id, conversation_id, embedding_model) INCLUDE (id, embedding_bits)"
            in indexes["ix_chunk_units"])
    assert "UNIQUE" in indexes["ix_conversation_chunks_range"]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'facts_legacyfact'"
        )
        fact_indexes = dict(cursor.fetchall())
    assert "(legacy_id, user_id)" in fact_indexes["ix_legacy_facts_legacy_user"]
    assert "(legacy_id, visibility)" in fact_indexes["ix_legacy_facts_legacy_vis"]


def test_agent_memory_short_ids_are_eight_alphanumerics():
    from agent_memory.models import AgentMemory, generate_short_id

    ids = {generate_short_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == 8 and i.isalnum() and i.isascii() for i in ids)
    field = AgentMemory._meta.get_field("id")
    assert field.max_length == 8 and field.primary_key


def test_migrations_are_complete():
    from django.core.management import call_command

    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
