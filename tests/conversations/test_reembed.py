"""`manage.py reembed` changing the dimensions of vector columns that hold embedded messages and
chunks: in one transaction, and with the indexes of the vectors and their sign bits in use."""

import io

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection

from conversations.embedding import embed_texts, model_key
from conversations.models import ConversationChunk, Message
from conversations.retrieval import search_conversations
from conversations.services.embedding import conversation_embed_messages
from tests.factories import ConversationFactory, import_messages
from tests.support.chunks import chunk_for

TABLES = ["conversations_message", "conversations_conversationchunk"]
INDEXES = ["ix_chunk_units", "ix_conversation_chunks_embed", "ix_message_embedding_bits",
           "ix_message_unembedded", "ix_message_units"]


def _embedded_history(family) -> None:
    """Two unit messages and a chunk, all embedded with the current model, and a system
    message (never embedded)."""
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(conversation, [("user", "Rose kept bees behind the orchard."),
                                   ("assistant", "Honey every August!"),
                                   ("system", "Not a unit.")])
    conversation_embed_messages(conversation_id=conversation.pk)
    chunk_for(conversation, 0, 3, "They talked about Rose's bees.")
    rows = [*Message.objects.exclude(role="system"), *ConversationChunk.objects.all()]
    assert {(r.embedding_model, len(r.embedding)) for r in rows} == {(model_key(), 1024)}


def _schema() -> tuple[list[tuple], list[tuple]]:
    """The vector, sign bits and key columns' types and the two tables' indexes."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT attrelid::regclass::text, attname, format_type(atttypid, atttypmod) "
                       "FROM pg_attribute WHERE attrelid = ANY(%s::regclass[]) AND attname IN "
                       "('embedding', 'embedding_bits', 'embedding_model') AND NOT attisdropped "
                       "ORDER BY 1, 2", [TABLES])
        columns = cursor.fetchall()
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s) "
                       "ORDER BY indexname", [TABLES])
        return columns, cursor.fetchall()


def _vectors() -> list[tuple]:
    return [(str(pk), None if vector is None else list(vector), key)
            for model in (Message, ConversationChunk)
            for pk, vector, key in model.objects.order_by("id")
            .values_list("id", "embedding", "embedding_model")]


def _plan(sql: str, params: list) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a table of three rows
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
    return plan


def test_reembed_resizes_columns_that_hold_embedded_messages_and_chunks(family, settings):
    """The reported failure: the key was cleared by an UPDATE after the ALTER TABLE had
    rewritten every row in the command's transaction, so each row's deferred foreign key checks
    were pending, and the chunks' HNSW index could not be built ("cannot CREATE INDEX ...
    because it has pending trigger events")."""
    _embedded_history(family)
    # As in production, where the rows were committed before: none of their checks pending.
    connection.check_constraints()
    settings.EMBEDDING_DIMENSIONS = 8
    out = io.StringIO()

    call_command("reembed", stdout=out)

    text = out.getvalue()
    assert "  messages: column embedding is now vector(8), vectors cleared\n" in text
    assert ("  chunks: column embedding is now vector(8), vectors cleared, "
            "index ix_conversation_chunks_embed rebuilt\n") in text
    # Every key was cleared: all three units were embedded again.
    assert "Embedded 2 messages and 1 chunks with hashing/rotated/8." in text
    for row in [*Message.objects.exclude(role="system"), *ConversationChunk.objects.all()]:
        assert row.embedding_model == "hashing/rotated/8"
        assert list(row.embedding) == pytest.approx(embed_texts([row.content])[0], abs=1e-6)
    assert Message.objects.filter(role="system").values_list(
        "embedding", "embedding_model").get() == (None, "")
    columns, _ = _schema()
    assert [(table, column, kind) for table, column, kind in columns
            if column != "embedding_model"] == [
        ("conversations_conversationchunk", "embedding", "vector(8)"),
        ("conversations_conversationchunk", "embedding_bits", "bit(8)"),
        ("conversations_message", "embedding", "vector(8)"),
        ("conversations_message", "embedding_bits", "bit(8)"),
    ]

    with connection.cursor() as cursor:
        cursor.execute("SELECT c.relname, i.indisvalid AND i.indisready AND i.indislive "
                       "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                       "WHERE c.relname = ANY(%s) ORDER BY c.relname", [INDEXES])
        assert cursor.fetchall() == [(name, True) for name in INDEXES]
    query = embed_texts(["bees"])[0]
    bits = "".join("1" if x > 0 else "0" for x in query)
    assert "Index Scan using ix_message_embedding_bits" in _plan(
        "SELECT id FROM conversations_message ORDER BY embedding_bits <~> %s::bit(8) LIMIT 2",
        [bits])
    assert "Index Scan using ix_conversation_chunks_embed" in _plan(
        "SELECT id FROM conversations_conversationchunk "
        "ORDER BY embedding <=> %s::vector(8) LIMIT 2", [str(query)])

    result = search_conversations(user=family.owner, legacy=family.legacy, query="bees", k=2)
    assert result.warnings == [] and result.hits[0].vector_rank is not None
    # The messages' vector list by the HNSW index of their sign bits.
    settings.SEARCH_EXACT_SCAN_MAX_UNITS = 0
    settings.SEARCH_RERANK_CANDIDATES = 1
    result = search_conversations(user=family.owner, legacy=family.legacy, query="bees", k=2)
    assert result.vector_scan in ("hnsw", "hnsw+bits")
    assert result.warnings == [] and result.hits[0].vector_rank is not None


def test_a_resize_that_fails_changes_nothing(family, settings):
    """The chunks' HNSW index cannot be built at 2,001 dimensions (pgvector's limit is 2,000),
    after the messages' column was changed: the whole resize is rolled back. (Called inside the
    test's transaction, whose own inserts' checks are pending: the command checks them first.)"""
    _embedded_history(family)
    before = _schema(), _vectors()
    settings.EMBEDDING_DIMENSIONS = 2001

    with pytest.raises(DatabaseError, match="more than 2000 dimensions for hnsw index"):
        call_command("reembed", stdout=io.StringIO())

    assert (_schema(), _vectors()) == before


def test_reembed_batches_go_on_from_a_cursor(family, settings, monkeypatch):
    """Each batch reads the rows past the previous one's last: from the start every time, a
    batch read every row done before it (quadratic over a large re-embed). A row the job
    worker embedded meanwhile is skipped, and the command says who embedded what."""
    from conversations.services.embedding import units_reembed_batch

    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(conversation, [("user", f"Rose kept hive {n}.") for n in range(7)])
    Message.objects.update(embedding_model="")
    count, cursor = units_reembed_batch(kind="messages", batch_size=3)
    assert (count, cursor) == (3, (conversation.pk, 2))
    # A row before the cursor loses its key again: the next batch does not go back for it.
    Message.objects.filter(sequence=0).update(embedding_model="")
    count, cursor = units_reembed_batch(kind="messages", batch_size=3, after=cursor)
    assert (count, cursor) == (3, (conversation.pk, 5))
    assert list(Message.objects.filter(embedding_model="").values_list("sequence", flat=True)
                .order_by("sequence")) == [0, 6]
    assert units_reembed_batch(kind="messages", batch_size=3, after=(conversation.pk, 6)) == (
        0, (conversation.pk, 6))

    Message.objects.update(embedding_model="")
    calls = []

    def with_the_worker(**kwargs):
        answer = units_reembed_batch(**kwargs)
        if not calls:  # the job worker embeds two rows after the command's first batch
            conversation_embed_messages(conversation_id=conversation.pk, limit=2)
        calls.append(answer)
        return answer

    monkeypatch.setattr("conversations.services.embedding.units_reembed_batch", with_the_worker)
    out = io.StringIO()
    call_command("reembed", "--batch-size", "3", stdout=out)
    assert [count for count, _ in calls] == [3, 2, 0, 0]
    assert ("Embedded 5 messages and 0 chunks" in out.getvalue()
            and "The job worker embedded the other 2 messages and 0 chunks" in out.getvalue())
    assert "7/7" in out.getvalue()
    assert not Message.objects.exclude(embedding_model=model_key()).exists()
