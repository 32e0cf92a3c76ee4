"""Writes of the retrieval units' vectors: messages embedded after append, and re-embedding."""

import logging
from dataclasses import dataclass
from uuid import UUID

from django.conf import settings
from django.db import connection
from django.db.models import Model, QuerySet

from conversations.embedding import embed_texts, model_key
from conversations.models import UNIT_ROLES, ConversationChunk, Message
from memory_site.core.ai import EmbeddingError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbedResult:
    embedded: int
    remaining: int  # units of the conversation still without a vector of the current model
    error: str = ""


def _embed_rows(rows: list[Model]) -> None:
    """Embed `rows` (messages or chunks) in one pass of embed_texts and store the vectors with
    the current model key; rows deleted meanwhile are simply not updated."""
    if not rows:
        return
    vectors = embed_texts([row.content for row in rows])
    table = connection.ops.quote_name(type(rows[0])._meta.db_table)
    with connection.cursor() as cursor:
        # Raw SQL, not bulk_update: the ORM would cast to the model's vector(n), which is not
        # the column's while `manage.py reembed` changes the dimensions.
        cursor.execute(
            f"UPDATE {table} AS t SET embedding = v.embedding::vector, embedding_model = %s "
            "FROM unnest(%s::uuid[], %s::text[]) AS v(id, embedding) WHERE t.id = v.id",
            [model_key(), [str(row.pk) for row in rows],
             ["[" + ",".join(repr(float(x)) for x in vector) + "]" for vector in vectors]],
        )


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
    embedded = 0
    error = ""
    while embedded < limit:
        rows = list(messages_pending(conversation_id=conversation_id)
                    .only("id", "content")[: min(batch, limit - embedded)])
        if not rows:
            break
        try:
            _embed_rows(rows)
        except EmbeddingError as exc:
            logger.warning("Embedding messages of %s failed; the sweep retries: %s",
                           conversation_id, exc)
            error = f"{type(exc).__name__}: {exc}"
            break
        embedded += len(rows)
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


# The HNSW indexes on the vector columns, as the migrations create them.
HNSW_INDEXES = {
    "messages": ("ix_message_embedding", Message),
    "chunks": ("ix_conversation_chunks_embed", ConversationChunk),
}


def embedding_columns_resize(*, dimensions: int) -> list[str]:
    """Change both vector columns to vector(`dimensions`): drop their HNSW indexes, clear every
    vector and its model key (a vector of other dimensions cannot be kept), alter the type and
    build the indexes again. Returns what was done, step by step, for the command's output."""
    done = []
    with connection.cursor() as cursor:
        for name, (index, model) in HNSW_INDEXES.items():
            table = connection.ops.quote_name(model._meta.db_table)
            cursor.execute(f"DROP INDEX IF EXISTS {connection.ops.quote_name(index)}")
            cursor.execute(
                f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({int(dimensions)}) "
                "USING NULL"
            )
            cursor.execute(f"UPDATE {table} SET embedding_model = '' WHERE embedding_model <> ''")
            cursor.execute(
                f"CREATE INDEX {connection.ops.quote_name(index)} ON {table} "
                "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
            )
            done.append(f"{name}: column embedding is now vector({dimensions}), vectors cleared, "
                        f"index {index} rebuilt")
    return done


def units_reembed_batch(*, kind: str, batch_size: int) -> int:
    """Embed the next `batch_size` messages or chunks without a vector of the current model;
    how many were embedded (0: none left). EmbeddingError propagates."""
    if kind == "messages":
        rows: list[Model] = list(messages_pending().only("id", "content")[:batch_size])
    else:
        rows = list(ConversationChunk.objects.exclude(embedding_model=model_key())
                    .order_by("id").only("id", "content")[:batch_size])
    _embed_rows(rows)
    return len(rows)
