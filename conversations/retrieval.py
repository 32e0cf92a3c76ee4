"""Hybrid retrieval over a user's earlier conversations about one legacy (seeds 000 and 004).

Units are the archived chunks of seed 000 and, optionally, the single user messages that no
chunk covers yet (the tail of a conversation too short to be archived). Each unit is ranked by
pgvector cosine distance and by PostgreSQL full-text search; the two ranks are fused by
reciprocal rank fusion, then a recency term and seed 004's open-loop priority are added.

The scope (user, legacy) is applied inside a MATERIALIZED CTE and the final order is a computed
score, so the planner can never answer from the HNSW index: pgvector 0.6 applies a WHERE after
its approximate scan and would silently return fewer rows than asked for when most neighbours
belong to other users. Scoped sets are small (one user's chunks about one legacy), so the exact
scan is cheap; see docs/agent-side.md.
"""

import logging
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import connection

from conversations.models import Conversation, ConversationChunk, Message
from facts.models import Legacy
from memory_site.core.ai import EmbeddingError, get_embedder
from memory_site.core.text import NUL_MESSAGE, has_nul

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchHit:
    """One retrieved unit; the message range is end-exclusive as in seed 000."""

    kind: str
    id: str
    content: str
    score: float
    conversation_id: UUID
    message_range_start: int
    message_range_end: int
    created_at: datetime
    vector_rank: int | None
    text_rank: int | None
    open_loop: bool


@dataclass(frozen=True)
class SearchResult:
    hits: list[SearchHit]
    total: int  # units in scope; len(hits) == min(k, total)
    # Set when a part of the ranking was unavailable, e.g. the embedding provider failed.
    warnings: list[str] = field(default_factory=list)


def validate_search_input(*, query: object, k: object) -> tuple[str, int]:
    """The cleaned query and k, or a ValidationError naming the field (`q`, `k`)."""
    errors: dict[str, list[str]] = {}
    text = query.strip() if isinstance(query, str) else ""
    if not text:
        errors["q"] = ["A search needs a query."]
    elif len(text) > settings.SEARCH_QUERY_MAX_CHARS:
        errors["q"] = [f"At most {settings.SEARCH_QUERY_MAX_CHARS} characters."]
    elif has_nul(text):
        errors["q"] = [NUL_MESSAGE]
    if k is None or k == "":
        number = settings.SEARCH_DEFAULT_K
    else:
        try:
            number = int(k)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            number = 0
            errors["k"] = ["Must be a whole number."]
        if "k" not in errors and not 1 <= number <= settings.SEARCH_MAX_K:
            errors["k"] = [f"Must be between 1 and {settings.SEARCH_MAX_K}."]
    if errors:
        raise ValidationError(errors)
    return text, number


def _vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(repr(float(v)) for v in vector) + "]"


def open_loops_for(*, user: AbstractBaseUser, legacy: Legacy) -> list[str]:
    """The unresolved threads of all the user's conversations about the legacy (seed 004)."""
    loops: list[str] = []
    for conversation_loops in Conversation.objects.filter(user=user, legacy=legacy).values_list(
        "open_loops", flat=True
    ):
        for loop in conversation_loops or []:
            text = loop.get("text", "") if isinstance(loop, dict) else str(loop)
            if text.strip():
                loops.append(text.strip())
    return loops


# Words that mark a sentence as an open loop ("I need to find …") say nothing of its subject.
_LOOP_MARKER_LEXEMES = frozenset(
    ["need", "find", "rememb", "forget", "remind", "ask", "check", "look", "call", "later",
     "sure", "let", "come", "back", "talk", "get"]
)


def _tsquery_literal(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def open_loop_tsquery(loops: list[str]) -> str:
    """A tsquery that matches text sharing two neighbouring subject words with an open loop.

    One shared word is too weak ("apple trees" is not "her apple pie recipe"); all words is
    too strict. A single-word loop matches on that word.
    """
    if not loops:
        return ""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.i, v.lexeme, v.positions[1] "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS t(txt, i), "
            "unnest(to_tsvector(%s::regconfig, t.txt)) AS v "
            "ORDER BY t.i, v.positions[1]",
            [loops, settings.SEARCH_TEXT_CONFIG],
        )
        rows = cursor.fetchall()
    by_loop: dict[int, list[str]] = {}
    for loop_index, lexeme, _position in rows:
        if lexeme not in _LOOP_MARKER_LEXEMES:
            by_loop.setdefault(loop_index, []).append(lexeme)
    clauses: list[str] = []
    for lexemes in by_loop.values():
        if len(lexemes) == 1:
            clauses.append(_tsquery_literal(lexemes[0]))
        clauses.extend(
            f"({_tsquery_literal(a)} & {_tsquery_literal(b)})"
            for a, b in zip(lexemes, lexemes[1:], strict=False)
        )
    return " | ".join(dict.fromkeys(clauses))


_SEARCH_SQL = """
WITH queries AS (
    SELECT
        -- plainto_tsquery ANDs every word; a question rarely repeats all of them, so OR them.
        replace(plainto_tsquery(%(cfg)s::regconfig, %(q)s)::text, '&', '|')::tsquery AS tsq,
        CASE WHEN %(loops)s = '' THEN NULL ELSE %(loops)s::tsquery END AS loop_tsq
),
scoped AS MATERIALIZED (
    SELECT 'chunk' AS kind, c.id::text AS id, c.conversation_id, c.content,
           c.message_range_start AS range_start, c.message_range_end AS range_end, c.created_at,
           (c.embedding <=> %(vec)s::vector) AS distance
    FROM {chunks} c
    WHERE c.user_id = %(user_id)s AND c.legacy_id = %(legacy_id)s
      AND NOT (c.conversation_id = ANY(%(excluded)s::uuid[]))
    UNION ALL
    SELECT 'message', m.id::text, m.conversation_id, m.content,
           m.sequence, m.sequence + 1, m.created_at, NULL
    FROM {messages} m
    JOIN {conversations} v ON v.id = m.conversation_id
    WHERE %(include_messages)s
      AND v.user_id = %(user_id)s AND v.legacy_id = %(legacy_id)s
      AND NOT (v.id = ANY(%(excluded)s::uuid[]))
      AND m.role = 'user'
      AND m.sequence >= COALESCE(
          (SELECT max(x.message_range_end) FROM {chunks} x WHERE x.conversation_id = v.id), 0)
),
matched AS (
    SELECT s.*,
           to_tsvector(%(cfg)s::regconfig, s.content) @@ queries.tsq AS text_match,
           ts_rank_cd(to_tsvector(%(cfg)s::regconfig, s.content), queries.tsq) AS text_score,
           COALESCE(to_tsvector(%(cfg)s::regconfig, s.content) @@ queries.loop_tsq, false)
               AS open_loop
    FROM scoped s CROSS JOIN queries
),
ranked AS (
    SELECT m.*,
           CASE WHEN m.distance IS NOT NULL THEN
               row_number() OVER (ORDER BY m.distance ASC NULLS LAST, m.created_at DESC, m.id)
           END AS vector_rank,
           CASE WHEN m.text_match THEN
               row_number() OVER (ORDER BY m.text_match DESC, m.text_score DESC,
                                  m.created_at DESC, m.id)
           END AS text_rank
    FROM matched m
),
scored AS (
    SELECT r.*,
           COALESCE(1.0 / (%(rrf_k)s + r.vector_rank), 0)
           + COALESCE(1.0 / (%(rrf_k)s + r.text_rank), 0)
           + %(recency_weight)s * power(0.5,
                 GREATEST(EXTRACT(EPOCH FROM (now() - r.created_at)), 0)
                 / 86400.0 / %(half_life)s)
           + CASE WHEN r.open_loop THEN %(open_loop_weight)s ELSE 0 END AS score
    FROM ranked r
)
SELECT kind, id, conversation_id, content, range_start, range_end, created_at,
       score::float8, vector_rank, text_rank, open_loop, count(*) OVER () AS total
FROM scored
ORDER BY score DESC, created_at DESC, id
LIMIT %(k)s
"""


def search_sql() -> str:
    return _SEARCH_SQL.format(
        chunks=connection.ops.quote_name(ConversationChunk._meta.db_table),
        messages=connection.ops.quote_name(Message._meta.db_table),
        conversations=connection.ops.quote_name(Conversation._meta.db_table),
    )


def search_params(
    *,
    user: AbstractBaseUser,
    legacy: Legacy,
    query: str,
    k: int,
    exclude_conversation_ids: list[UUID] | None = None,
    include_messages: bool | None = None,
) -> dict[str, object]:
    """The parameters of search_sql(); embeds the query with the configured embedder.

    When the embedder fails, `vec` is NULL: no row gets a vector rank and the ranking
    falls back to full-text search, recency and open loops rather than failing the request.
    """
    try:
        vec: str | None = _vector_literal(get_embedder().embed([query])[0])
    except EmbeddingError as exc:
        logger.warning("search without vectors, the embedder failed: %s", exc)
        vec = None
    return {
        "cfg": settings.SEARCH_TEXT_CONFIG,
        "q": query,
        "loops": open_loop_tsquery(open_loops_for(user=user, legacy=legacy)),
        "vec": vec,
        "user_id": user.pk,
        "legacy_id": legacy.pk,
        "excluded": list(exclude_conversation_ids or []),
        "include_messages": (
            settings.SEARCH_INCLUDE_MESSAGES if include_messages is None else include_messages
        ),
        "rrf_k": settings.SEARCH_RRF_K,
        "recency_weight": settings.SEARCH_RECENCY_WEIGHT,
        "half_life": max(settings.SEARCH_RECENCY_HALF_LIFE_DAYS, 1e-6),
        "open_loop_weight": settings.SEARCH_OPEN_LOOP_WEIGHT,
        "k": k,
    }


def search_conversations(
    *,
    user: AbstractBaseUser,
    legacy: Legacy,
    query: str,
    k: int,
    exclude_conversation_ids: list[UUID] | None = None,
    include_messages: bool | None = None,
) -> SearchResult:
    """The top `k` units of the user's conversations about `legacy`, best first.

    The caller has checked membership (facts.selectors.legacy_for_member); the SQL scopes by
    user and legacy itself, so another user's rows can never be returned.
    """
    params = search_params(
        user=user, legacy=legacy, query=query, k=k,
        exclude_conversation_ids=exclude_conversation_ids, include_messages=include_messages,
    )
    with connection.cursor() as cursor:
        cursor.execute(search_sql(), params)
        rows = cursor.fetchall()
    hits = [
        SearchHit(
            kind=row[0], id=row[1], conversation_id=row[2], content=row[3],
            message_range_start=row[4], message_range_end=row[5], created_at=row[6],
            score=round(float(row[7]), 6), vector_rank=row[8], text_rank=row[9],
            open_loop=bool(row[10]),
        )
        for row in rows
    ]
    warnings = [] if params["vec"] is not None else [
        "vector search unavailable (the embedding provider failed); ranked by text only"
    ]
    return SearchResult(hits=hits, total=rows[0][11] if rows else 0, warnings=warnings)
