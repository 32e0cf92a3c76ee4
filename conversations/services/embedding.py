"""Writes of the retrieval units' vectors: messages embedded after append, and re-embedding."""

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID
from weakref import WeakKeyDictionary

import psycopg
from django.conf import settings
from django.db import connection
from django.db.models import Model, Q, QuerySet
from pgvector import Vector
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo

from conversations.embedding import embed_texts, model_key
from conversations.models import UNIT_ROLES, ConversationChunk, Message
from memory_site.core.ai import EmbeddingError
from memory_site.core.sql import quoted_table

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbedResult:
    embedded: int
    remaining: int  # units of the conversation still without a vector of the current model
    error: str = ""


# The `vector` type's info per psycopg connection (its oid differs between databases).
_VECTOR_TYPES: "WeakKeyDictionary[psycopg.Connection, TypeInfo]" = WeakKeyDictionary()


def _vector_cursor() -> psycopg.Cursor:
    """A cursor with server-side binding on Django's connection (so in its transaction) that
    sends pgvector `Vector`s in pgvector's binary format: 4 bytes a dimension instead of a
    decimal text that the server parses again. Registered on this cursor only, so Django's
    own cursors keep reading vectors as before."""
    connection.ensure_connection()
    raw = connection.connection
    info = _VECTOR_TYPES.get(raw)
    if info is None:
        info = _VECTOR_TYPES[raw] = TypeInfo.fetch(raw, "vector")
    cursor = psycopg.Cursor(raw)
    register_vector_info(cursor, info)
    return cursor


def _store_vectors(model: type[Model], ids: Sequence[object], vectors: list[list[float]], *,
                   skip_locked: bool = True) -> int:
    """Store `vectors` (one per id) with the current model key in one statement; rows deleted
    meanwhile are simply not updated. The floats are the embedder's, rounded to the column's
    single precision as the server's parser did when they were sent as text.

    The rows are locked in the order of their ids (FOR NO KEY UPDATE: what an UPDATE of
    non-key columns takes, so that a transaction inserting a row that refers to one is not in
    the way), and with `skip_locked` a row another transaction holds is skipped: two jobs
    embedding the same conversation's new messages at once (two appends in a row, two
    workers) locked their rows in the order of their joins and could deadlock; now the second
    leaves a held row, which the first stores, or the next job or the sweep. Without
    `skip_locked` (`manage.py reembed`) it waits for it, in id order. Returns how many rows
    were stored."""
    table = quoted_table(model)
    with _vector_cursor() as cursor:
        # `vector` without dimensions, not the model's vector(n): the column's dimensions
        # change while `manage.py reembed` runs.
        cursor.execute(
            "WITH v AS (SELECT * FROM unnest(%s::uuid[], %b::vector[]) AS v(id, embedding)), "
            f"locked AS (SELECT t.id FROM {table} t WHERE t.id IN (SELECT id FROM v) "
            f"ORDER BY t.id FOR NO KEY UPDATE{' SKIP LOCKED' if skip_locked else ''}) "
            f"UPDATE {table} AS t SET embedding = v.embedding, embedding_model = %s "
            "FROM v JOIN locked USING (id) WHERE t.id = v.id",
            [list(ids), [Vector(vector) for vector in vectors], model_key()],
        )
        return cursor.rowcount


def _embed_rows(rows: list[Model]) -> int:
    """Embed `rows` (messages or chunks) in one pass of embed_texts and store the vectors with
    the current model key, waiting for a row another transaction holds; rows deleted meanwhile
    are simply not updated. Returns how many were stored."""
    if not rows:
        return 0
    vectors = embed_texts([row.content for row in rows])
    return _store_vectors(type(rows[0]), [row.pk for row in rows], vectors, skip_locked=False)


def messages_pending(*, conversation_id: UUID | str | None = None) -> QuerySet[Message]:
    """Unit messages without a vector of the current model, oldest first."""
    pending = Message.objects.filter(role__in=UNIT_ROLES).exclude(embedding_model=model_key())
    if conversation_id is not None:
        pending = pending.filter(conversation_id=conversation_id)
    return pending.order_by("conversation_id", "sequence")


def conversation_embed_messages(*, conversation_id: UUID | str,
                                limit: int | None = None) -> EmbedResult:
    """Embed up to `limit` (EMBEDDING_JOB_MAX_MESSAGES) of the conversation's messages that
    have no vector of the current model, in requests of EMBEDDING_BATCH_SIZE. An embedder
    failure stops the run and leaves the rest unembedded (the sweep queues the conversation
    again); what was stored before it stays."""
    limit = settings.EMBEDDING_JOB_MAX_MESSAGES if limit is None else limit
    batch = max(settings.EMBEDDING_BATCH_SIZE, 1)
    embedded = sent = 0
    error = ""
    after = -1  # the last sequence read: each batch starts past the previous one
    while sent < limit:
        rows = list(messages_pending(conversation_id=conversation_id)
                    .filter(sequence__gt=after)
                    .values_list("id", "sequence", "content")[: min(batch, limit - sent)])
        if not rows:
            break
        try:
            vectors = embed_texts([content for _, _, content in rows])
        except EmbeddingError as exc:
            logger.warning("Embedding messages of %s failed; the sweep retries: %s",
                           conversation_id, exc)
            error = f"{type(exc).__name__}: {exc}"
            break
        embedded += _store_vectors(Message, [pk for pk, _, _ in rows], vectors)
        sent += len(rows)
        after = rows[-1][1]
    remaining = messages_pending(conversation_id=conversation_id).count()
    return EmbedResult(embedded=embedded, remaining=remaining, error=error)


def conversations_with_unembedded_messages(*, limit: int = 1000) -> list[str]:
    """Ids of conversations with messages never embedded (embedding_model ""), read from the
    partial index ix_message_unembedded."""
    return [str(pk) for pk in Message.objects.filter(role__in=UNIT_ROLES, embedding_model="")
            .order_by().values_list("conversation_id", flat=True).distinct()[:limit]]


# --- manage.py reembed ---------------------------------------------------------------------------


def pending_counts() -> dict[str, int]:
    """Messages and chunks without a vector of the current model."""
    return {
        "messages": messages_pending().count(),
        "chunks": ConversationChunk.objects.exclude(embedding_model=model_key()).count(),
    }


def embedding_column_dimensions() -> dict[str, int | None]:
    """The dimensions of the message and chunk vector columns as the database has them."""
    tables = {"messages": Message._meta.db_table, "chunks": ConversationChunk._meta.db_table}
    with connection.cursor() as cursor:
        found = {}
        for name, table in tables.items():
            cursor.execute(
                "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass "
                "AND attname = 'embedding' AND NOT attisdropped", [table]
            )
            row = cursor.fetchone()
            found[name] = row[0] if row and row[0] > 0 else None
    return found


# The vector columns and the HNSW index on each full vector (None: the column has none; since
# migration 0007 messages are searched by their sign bits' index, not their full vectors').
VECTOR_COLUMNS = {
    "messages": (None, Message),
    "chunks": ("ix_conversation_chunks_embed", ConversationChunk),
}


def embedding_columns_resize(*, dimensions: int) -> list[str]:
    """Change both vector columns to vector(`dimensions`): drop their HNSW indexes, clear every
    vector and its model key (a vector of other dimensions cannot be kept), alter the type and
    build the indexes again. Returns what was done, step by step, for the command's output.

    The key is cleared by the ALTER TABLE's own rewrite (`embedding_model` altered to its own
    type `USING ''`), not by an UPDATE after it: the rewritten rows are this transaction's, so
    an UPDATE queued a check of each row's deferred foreign keys (Django makes them DEFERRABLE
    INITIALLY DEFERRED), and PostgreSQL builds no index and alters no table with trigger events
    pending on it. It also wrote every row, and every index entry, a second time."""
    done = []
    with connection.cursor() as cursor:
        for name, (index, model) in VECTOR_COLUMNS.items():
            table = quoted_table(model)
            if index:
                cursor.execute(f"DROP INDEX IF EXISTS {connection.ops.quote_name(index)}")
            cursor.execute(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = %s::regclass AND attname = 'embedding_model'",
                [model._meta.db_table],
            )
            key_type = cursor.fetchone()[0]
            cursor.execute(
                f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({int(dimensions)}) "
                f"USING NULL, ALTER COLUMN embedding_model TYPE {key_type} USING ''"
            )
            step = f"{name}: column embedding is now vector({dimensions}), vectors cleared"
            if index:
                cursor.execute(
                    f"CREATE INDEX {connection.ops.quote_name(index)} ON {table} "
                    "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
                )
                step += f", index {index} rebuilt"
            done.append(step)
    return done


def units_reembed_batch(*, kind: str, batch_size: int,
                        after: tuple | None = None) -> tuple[int, tuple | None]:
    """Embed the next `batch_size` messages or chunks without a vector of the current model,
    past `after` (the cursor the previous batch returned; None: from the start): how many were
    embedded (0: none left) and the cursor to go on from. With the cursor each batch reads the
    rows ahead of it only; from the start every time, a batch read every row done before it
    (quadratic over a re-embed: 2,000 messages a second at its start, 750 at the end of
    72,000). EmbeddingError propagates."""
    if kind == "messages":
        pending = messages_pending()
        if after is not None:
            pending = pending.filter(Q(conversation_id__gt=after[0])
                                     | Q(conversation_id=after[0], sequence__gt=after[1]))
        rows: list[Model] = list(
            pending.only("id", "content", "conversation_id", "sequence")[:batch_size])
        cursor = (rows[-1].conversation_id, rows[-1].sequence) if rows else after
    else:
        chunks = ConversationChunk.objects.exclude(embedding_model=model_key())
        if after is not None:
            chunks = chunks.filter(id__gt=after[0])
        rows = list(chunks.order_by("id").only("id", "content")[:batch_size])
        cursor = (rows[-1].pk,) if rows else after
    _embed_rows(rows)
    return len(rows), cursor
