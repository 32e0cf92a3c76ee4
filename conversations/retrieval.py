"""Hybrid retrieval over a user's earlier conversations about one legacy (seeds 000 and 004).

Units are every user and assistant message and the archived chunks (the summary-level units
beside them). Each unit in scope can be a candidate of four short lists, each answered by an
index or a stored column: the nearest by embedding (an exact scan of a small scope, the HNSW
index with pgvector 0.8's iterative scan for a large one), the best by full-text rank on the
stored tsvector (GIN), the newest, and the newest that can close an open loop. The candidates'
vector and text ranks are fused by reciprocal rank fusion, then recency and seed 004's
open-loop priority are added. A hit is a place: a message with its neighbours (both roles) or
a chunk, and units whose places overlap in one conversation are merged into one hit, so the
top k are k different places. docs/agent-side.md has the design and its guarantees.
"""

import logging
import math
import re
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import Any
from uuid import UUID

import numpy
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone
from pgvector import Vector
from pgvector.psycopg.vector import VectorBinaryDumper

from conversations.embedding import embed_texts, model_key
from conversations.models import (
    STORED_TEXT_CONFIG,
    Conversation,
    ConversationChunk,
    Message,
)
from facts.models import Legacy
from memory_site.core.ai import EmbeddingError, truncate_to_tokens
from memory_site.core.language.sentences import split_sentences
from memory_site.core.sql import json_column, prepared_cursor, prepares_statements, quoted_table
from memory_site.core.text import NUL_MESSAGE, has_nul

logger = logging.getLogger(__name__)

VECTOR_UNAVAILABLE = (
    "vector search unavailable (the embedding provider failed); ranked by text only"
)
NO_WORDS = "the query has no words to search for (only stop words or punctuation); newest first"


@dataclass(frozen=True)
class HitMessage:
    sequence: int
    role: str
    content: str


def message_range_label(start: int, end: int) -> str:
    """An end-exclusive range of message sequences as the prompt names it: "message 4" for
    one message, "messages 4–7" (4 to 7, as the pages write it) for more."""
    return f"message {start}" if end - start <= 1 else f"messages {start}–{end - 1}"


@dataclass(frozen=True)
class SearchHit:
    """One place of an earlier conversation: a message with its neighbours, or a chunk, with
    every other unit whose range overlapped it merged in. The range is end-exclusive as in
    seed 000; `kind`, `id`, the ranks and `created_at` are those of its best unit."""

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
    summary: str = ""  # the summaries of the chunks in the place
    messages: tuple[HitMessage, ...] = ()  # the messages shown, in sequence order
    unit_ids: tuple[str, ...] = ()  # every unit merged into the place, best first

    @property
    def range_label(self) -> str:
        return message_range_label(self.message_range_start, self.message_range_end)


@dataclass(frozen=True)
class SearchResult:
    hits: list[SearchHit]
    # Units in scope (messages and chunks). len(hits) == min(k, places), where places are the
    # non-overlapping places the units make; k when units do not overlap.
    total: int
    # Set when a part of the ranking was unavailable, e.g. the embedding provider failed.
    warnings: list[str] = field(default_factory=list)
    # How the vector lists were read (conversations.retrieval._vector_scan): "exact" (cosine
    # of every unit in scope), "bits" (Hamming distance of every unit's sign bits, the nearest
    # re-ranked by cosine), "hnsw" (the sign bits' HNSW index, iterative scan, re-ranked),
    # "hnsw+bits" (an index scan stopped short and the Hamming scan completed it) or "none".
    vector_scan: str = "none"


def validate_search_input(*, query: object, k: object) -> tuple[str, int]:
    """The cleaned query and k, or a ValidationError naming the field (`q`, `k`)."""
    errors: dict[str, list[str]] = {}
    text = query.strip() if isinstance(query, str) else ""
    if not text:
        errors["q"] = ["A search needs a query."]
    elif len(query) > settings.SEARCH_QUERY_MAX_CHARS:  # as sent, as the schema's maxLength
        errors["q"] = [f"At most {settings.SEARCH_QUERY_MAX_CHARS} characters."]
    elif has_nul(text):
        errors["q"] = [NUL_MESSAGE]
    if k is None:
        number = settings.SEARCH_DEFAULT_K
    elif isinstance(k, int) or (isinstance(k, str) and re.fullmatch(r"-?[0-9]+", k)):
        number = int(k)
    else:
        number = 0
        errors["k"] = ["Must be a whole number."]
    if "k" not in errors and not 1 <= number <= settings.SEARCH_MAX_K:
        errors["k"] = [f"Must be between 1 and {settings.SEARCH_MAX_K}."]
    if errors:
        raise ValidationError(errors)
    return text, number


def _query_vector(vector: list[float]) -> Vector:
    """The query's vector as a parameter: sent in pgvector's binary format (float4, as pgvector
    stores them; _run's cursor dumps it with pgvector's binary dumper, its type read from the
    statement's ::vector cast), not as 1,024 numbers written out and parsed again (0.5 ms a
    query)."""
    return Vector(numpy.asarray(vector, numpy.float32))


def _tsquery_literal(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


# --- Open loops (seed 004) --------------------------------------------------------------------

# Words that mark a sentence as an open loop ("I need to find …") say nothing of its subject.
_LOOP_MARKER_LEXEMES = frozenset(
    ["need", "find", "rememb", "forget", "remind", "ask", "check", "look", "call", "later",
     "sure", "let", "come", "back", "talk", "get"]
)


def _loop_texts(open_loops_per_conversation: list[object]) -> list[str]:
    loops: list[str] = []
    for conversation_loops in open_loops_per_conversation:
        for loop in conversation_loops or []:  # type: ignore[attr-defined]
            text = loop.get("text", "") if isinstance(loop, dict) else str(loop)
            if text.strip():
                loops.append(text.strip())
    return loops


def open_loops_for(*, user: AbstractBaseUser, legacy: Legacy) -> list[str]:
    """The unresolved threads of all the user's conversations about the legacy (seed 004)."""
    return _loop_texts(list(Conversation.objects.filter(user=user, legacy=legacy).values_list(
        "open_loops", flat=True
    )))


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
            [loops, STORED_TEXT_CONFIG],
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


# --- The query's words --------------------------------------------------------------------------


def _legacy_names(legacy: Legacy) -> list[str]:
    """The words of the legacy's name: first name, nickname, family name."""
    return list(dict.fromkeys(re.findall(r"\w[\w'-]*", legacy.name)))


def query_lexemes(query: str, *, legacy: Legacy | None = None) -> list[str]:
    """The query's words, stemmed, stop words left out, sorted; none for a query of stop words
    or punctuation only. With SEARCH_EXPAND_NAMES, a query that names the legacy by one of
    their names also looks for the others."""
    texts = [query]
    if settings.SEARCH_EXPAND_NAMES and legacy is not None:
        names = _legacy_names(legacy)
        lowered = query.lower()
        if any(name.lower() in lowered for name in names):
            texts.extend(names)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT v.lexeme FROM unnest(%s::text[]) AS t(txt), "
            "unnest(to_tsvector(%s::regconfig, t.txt)) AS v ORDER BY 1",
            [texts, STORED_TEXT_CONFIG],
        )
        return [row[0] for row in cursor.fetchall()]


def query_tsquery(lexemes: list[str]) -> str:
    """The query's words OR-ed: a question rarely repeats all of them ("" without words)."""
    return " | ".join(_tsquery_literal(lexeme) for lexeme in lexemes)


def all_words_tsquery(tsquery: str) -> str:
    """The words of query_tsquery's OR-ed `tsquery` AND-ed: a unit that holds all of them."""
    return tsquery.replace("' | '", "' & '")


# --- The scope ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Conversation:
    id: UUID
    message_count: int  # the next sequence: windows end before it
    units: int  # user and assistant messages
    embedded: int  # of them, embedded with the current model
    chunks: int
    chunks_embedded: int


@dataclass(frozen=True)
class Scope:
    """The user's conversations about the legacy that are searched, newest first, with their
    unit counts (read from indexes), and the open loops of all of them."""

    conversations: list[_Conversation]
    loops: list[str]
    include_messages: bool
    # The planner's estimate of each table's rows, all users' (pg_class.reltuples; 0 when
    # never analysed): what an index scan over the whole table wades through.
    table_rows: dict[str, int] = field(default_factory=dict)

    @property
    def ids(self) -> list[UUID]:
        return [c.id for c in self.conversations]

    @property
    def messages(self) -> int:
        return sum(c.units for c in self.conversations) if self.include_messages else 0

    @property
    def messages_embedded(self) -> int:
        return sum(c.embedded for c in self.conversations) if self.include_messages else 0

    @property
    def chunks(self) -> int:
        return sum(c.chunks for c in self.conversations)

    @property
    def chunks_embedded(self) -> int:
        return sum(c.chunks_embedded for c in self.conversations)

    @property
    def total(self) -> int:
        return self.messages + self.chunks

    def newest(self, units: int) -> list[UUID]:
        """The newest conversations that together hold at least `units` units."""
        chosen, held = [], 0
        for conversation in self.conversations:
            if held >= units:
                break
            chosen.append(conversation.id)
            held += conversation.units + conversation.chunks
        return chosen


# No unit is counted: a conversation's units are its message_count (sequences are gap-free
# and messages are never deleted one by one) minus its messages that are not units, read from
# the small partial index ix_message_non_units; of them, those without a vector of the current
# model are read from ix_message_units as two ranges around the current model's key (after
# the embedding job, none or a few). Chunks are a twentieth of the units and are counted, each
# conversation's from ix_chunk_units alone (an index-only scan: the sign bits are NULL exactly
# when the vector is), by user and legacy too, as the lists read them.
_SCOPE_SQL = """
SELECT v.id, v.message_count, v.open_loops, v.id = ANY(%(excluded)s::uuid[]) AS excluded,
       v.message_count - (SELECT count(*) FROM {messages} m
        WHERE m.conversation_id = v.id AND NOT (m.role IN ('user', 'assistant'))) AS units,
       (SELECT count(*) FROM {messages} m
        WHERE m.conversation_id = v.id AND m.role IN ('user', 'assistant')
          AND m.embedding_model < %(model)s)
       + (SELECT count(*) FROM {messages} m
          WHERE m.conversation_id = v.id AND m.role IN ('user', 'assistant')
            AND m.embedding_model > %(model)s) AS other,
       c.chunks, c.chunks_embedded,
       (SELECT reltuples FROM pg_class WHERE oid = '{messages}'::regclass) AS message_rows,
       (SELECT reltuples FROM pg_class WHERE oid = '{chunks}'::regclass) AS chunk_rows
FROM {conversations} v
CROSS JOIN LATERAL (
  SELECT count(*) AS chunks,
         count(*) FILTER (WHERE c.embedding_model = %(model)s
                          AND c.embedding_bits IS NOT NULL) AS chunks_embedded
  FROM {chunks} c WHERE c.user_id = %(user_id)s AND c.legacy_id = %(legacy_id)s
                     AND c.conversation_id = v.id) AS c
WHERE v.user_id = %(user_id)s AND v.legacy_id = %(legacy_id)s
ORDER BY v.last_message_at DESC NULLS LAST, v.created_at DESC, v.id
"""


def _tables() -> dict[str, str]:
    return {
        "messages": quoted_table(Message),
        "chunks": quoted_table(ConversationChunk),
        "conversations": quoted_table(Conversation),
    }


def search_scope(
    *, user: AbstractBaseUser, legacy: Legacy, exclude_conversation_ids: list[UUID] | None = None,
    include_messages: bool | None = None,
) -> Scope:
    """The scope of a search, in one query: (user, legacy) applied in SQL."""
    with prepared_cursor() as cursor:
        cursor.execute(_SCOPE_SQL.format(**_tables()), {
            "excluded": [str(pk) for pk in exclude_conversation_ids or []],
            "model": model_key(), "user_id": user.pk, "legacy_id": legacy.pk,
        })
        rows = cursor.fetchall()
    return Scope(
        conversations=[
            _Conversation(id=row[0], message_count=row[1], units=row[4],
                          embedded=row[4] - row[5], chunks=row[6] or 0,
                          chunks_embedded=row[7] or 0)
            for row in rows if not row[3]
        ],
        loops=_loop_texts([json_column(row[2]) for row in rows]),
        include_messages=(
            settings.SEARCH_INCLUDE_MESSAGES if include_messages is None else include_messages
        ),
        table_rows={"message": max(int(rows[0][8]), 0), "chunk": max(int(rows[0][9]), 0)}
        if rows else {},
    )


# --- Candidates ---------------------------------------------------------------------------------


@cache
def _pgvector_version(vendor_key: str) -> tuple[int, ...]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    if row is None:
        return (0,)
    return tuple(int(part) for part in row[0].split(".") if part.isdigit())


def iterative_scans_supported() -> bool:
    """pgvector 0.8 added iterative index scans (hnsw.iterative_scan); an older one has none."""
    return _pgvector_version(connection.settings_dict["NAME"]) >= (0, 8)


# The query's vector (sent once, in pgvector's binary format) and tsqueries, read
# by every list through the CTE `q` (NULL when absent: no vector, or no words).
_QUERY_CTE = """
q AS MATERIALIZED (SELECT v, binary_quantize(v) AS b,
                          NULLIF(%(tsq)s, '')::tsquery AS tsq,
                          NULLIF(%(tsq_all)s, '')::tsquery AS tsq_all,
                          NULLIF(%(loop_tsq)s, '')::tsquery AS loop_tsq
                   FROM (SELECT %(vec)s::vector AS v) AS sent)
"""
_MESSAGE_SCOPE = """
m.conversation_id = ANY(%(conv)s::uuid[]) AND m.role IN ('user', 'assistant')
"""


def _chunks_of(conversations: str, columns: str, where: str = "") -> str:
    """A FROM item (alias m) of the chunks of the conversations in the uuid[] parameter
    `conversations` that are the user's about the legacy: one probe of ix_chunk_units per
    conversation (OFFSET 0 keeps the planner from flattening it into a join), so that even a
    plan made without the values (memory_site.apps) reads that index rather than all of the
    user's chunks about the legacy, or the user's and the legacy's foreign-key indexes."""
    return (f"unnest(%({conversations})s::uuid[]) AS nc(id) CROSS JOIN LATERAL "
            f"(SELECT {columns} FROM {{chunks}} m WHERE m.user_id = %(user_id)s "
            f"AND m.legacy_id = %(legacy_id)s AND m.conversation_id = nc.id{where} "
            "OFFSET 0) AS m")


# The chunks of the text list's newest conversations (%(text_conv)s: SEARCH_TEXT_MAX_UNITS
# units, about a twentieth of them chunks), read once, a conversation at a time: the chunks'
# text, open-loop and newest lists rank these rows, so that no list reads the whole table's GIN
# posting lists (a common word's grow with every user's chunks: at 20,000 chunks in the table,
# a text list by the GIN index read 7,173 entries to find 89 of the scope's) nor the rows of
# every chunk in scope. The vector list reads every chunk in scope, from ix_chunk_units (the
# sign bits; never the bits' HNSW index: _vector_scan); the full vectors of those it re-ranks
# by primary key.
_CHUNK_CTE = f"""
cs AS MATERIALIZED (SELECT m.* FROM {_chunks_of("text_conv", "m.id, m.conversation_id, "
    "m.message_range_start, m.message_range_end, m.created_at, m.search_vector")})
"""
# The messages of the text list's newest conversations (used while they hold at most twice
# SEARCH_TEXT_MAX_UNITS units) that share a word with the query, read by the conversation index
# and matched row by row. ts_match_vq is the function behind @@: no index answers a function
# call, so no plan takes the GIN index, whose posting list of each query word holds every
# user's messages and grows with the table, not the scope.
_MESSAGE_TEXT_SCOPE = _MESSAGE_SCOPE.replace("%(conv)s", "%(text_conv)s")
_MESSAGE_TEXT_CTE = f"""
mm AS MATERIALIZED (SELECT m.id, m.conversation_id, m.sequence, m.created_at, m.search_vector
                    FROM {{messages}} m, q
                    WHERE {_MESSAGE_TEXT_SCOPE} AND ts_match_vq(m.search_vector, q.tsq))
"""
# The weight of each query word (SEARCH_TEXT_IDF): its inverse document frequency among the
# messages of the text list's newest conversations (%(text_n)s of them), ln(1 + N / df), so that
# a name said twice in a long history counts for more than "garden", said in every session. The
# frequencies are counted over the rows of the CTE mm (a message that holds a word of the query
# matches its OR-ed tsquery, so the matches are all the rows to count), or with the GIN index
# when the messages' text list takes it (the same counts either way: both forms rank alike).
# One row: the words (lq) and their weights (idf) as arrays in the order of %(lexemes)s, which
# _text_rank reads by position.
_IDF_CTE = """
w AS MATERIALIZED (SELECT array_agg(l.lq ORDER BY l.i) AS lq,
                          array_agg(ln(1 + %(text_n)s::float8 / greatest(d.df, 1))
                                    ORDER BY l.i) AS idf
                   FROM (SELECT lexeme::tsquery AS lq, i
                         FROM unnest(%(lexemes)s::text[]) WITH ORDINALITY AS t(lexeme, i)) AS l
                   CROSS JOIN LATERAL (SELECT count(*) AS df FROM {df_rows} m
                                       WHERE {df_where} AND m.search_vector @@ l.lq) AS d)
"""
_NO_IDF_CTE = "w AS (SELECT NULL::tsquery[] AS lq, NULL::float8[] AS idf)"
# What each list carries, read with its rows (no candidate is read again by primary key): the
# unit's place and date, and its stored tsvector, from which the wrapper of each list computes
# what ranks the candidate after the list's LIMIT (so for n rows at most): the text rank of the
# stored tsvector and the open-loop match. The distance is the one the vector list ranked by (a
# unit outside that list has none: no full vector is read again). No text: _place_texts reads
# the texts of the final places only.
_COLUMNS = {
    "message": "{a}.conversation_id, {a}.sequence AS rs, {a}.sequence + 1 AS re, "
               "{a}.created_at, {a}.search_vector AS sv",
    "chunk": "{a}.conversation_id, {a}.message_range_start AS rs, {a}.message_range_end AS re, "
             "{a}.created_at, {a}.search_vector AS sv",
}


def _rank_terms(words: int) -> int:
    """The CASE terms of _text_rank for a query of `words` words: a power of two (at least 4),
    so that queries of a similar length share one statement text, prepared once (a term past
    the query's words reads NULL from w's arrays and adds 0)."""
    return max(4, 1 << max(words - 1, 0).bit_length())


def _text_rank(sv: str, words: int) -> str:
    """The text rank of the tsvector `sv`: with SEARCH_TEXT_IDF the summed weights (the CTE w)
    of the query's `words` words it holds, ts_rank (how often they occur) breaking the ties;
    else ts_rank_cd alone. One term per word (_rank_terms), read from w's arrays, rather than a
    subquery per row: a text list ranks hundreds of rows. ts_rank, not ts_rank_cd, breaks the
    ties: it costs a fifth as much per row and ranked the labelled sets alike
    (docs/quality.md)."""
    if settings.SEARCH_TEXT_IDF:
        terms = "".join(f"CASE WHEN {sv} @@ w.lq[{i}] THEN w.idf[{i}] ELSE 0 END + "
                        for i in range(1, _rank_terms(words) + 1))
        return f"({terms}0.001 * ts_rank({sv}, q.tsq, %(norm)s::int))"
    return f"ts_rank_cd({sv}, q.tsq, %(norm)s::int)"


_RANKS = """
CASE WHEN x.sv @@ q.tsq THEN {rank} END AS text_score,
coalesce(x.sv @@ q.loop_tsq, false) AS open_loop
"""


def _lists(kind: str, *, vector: str | None, text: str | None, loops: bool,
           recent: bool, text_rows: bool = True, words: int = 0,
           chunk_text_all: bool = False) -> list[str]:
    """The candidate lists of one table as SELECTs of (list, kind, id, conversation, range,
    created_at in epoch seconds, distance, text rank, open-loop match), each answered by an
    index with a LIMIT. `vector` is "exact", "bits", "hnsw" or None; `text` is "newest" (the
    newest conversations only), "all" (and the units with every word in the others) or None.
    With `text_rows`, the messages' text list matches the newest conversations' rows one by
    one (the CTE mm); without, it takes the GIN index. `words`: the query's words (lexemes).
    With `chunk_text_all` (and `text` "all"), the chunks of the older conversations that hold
    every word are a text list too, as when a chunk may be found by no vector."""
    # A chunk list reads the newest conversations' chunks (the CTE cs: scoped already), but
    # the vector list (and the all-words list, chunk_text_all) reads every chunk in scope, one
    # conversation at a time (_chunks_of); chunks are never read by the HNSW index.
    table = "{messages}" if kind == "message" else "{chunks}"
    source, scope = (table, _MESSAGE_SCOPE) if kind == "message" else ("cs", "TRUE")
    if kind == "chunk" and vector == "exact":
        vector = "bits"  # the Hamming order of at most r chunks, all re-ranked by cosine

    def cols(alias: str) -> str:
        return _COLUMNS[kind].format(a=alias)

    def head(name: str) -> str:
        # The vector list carries the cosine distance it ranked by, the text lists the text
        # rank (x.ts); the others no distance, and their text rank is computed here.
        distance = "x.d" if name == "vector" else "NULL::float8"
        rank = "x.ts" if name.startswith("text") else _text_rank("x.sv", words)
        return (f"SELECT '{name}' AS list, '{kind}' AS kind, x.id::text, x.conversation_id, "
                f"x.rs, x.re, extract(epoch FROM x.created_at)::float8, {distance} AS distance, "
                f"{_RANKS.format(rank=rank)} FROM ")

    lists = []
    embedded = f"{scope} AND m.embedding_model = %(model)s AND m.embedding IS NOT NULL"
    with_bits = f"{scope} AND m.embedding_model = %(model)s AND m.embedding_bits IS NOT NULL"
    if vector == "exact":
        # MATERIALIZED: the distance of every unit in scope (the scope is at most
        # SEARCH_RERANK_CANDIDATES), so that no index can answer: an HNSW scan without
        # iterative scans applies the scope after its ef_search neighbours and would lose rows.
        lists.append(
            head("vector") +
            f"(WITH s AS MATERIALIZED (SELECT m.id, m.embedding <=> q.v AS d, {cols('m')} "
            f"FROM {source} m, q WHERE {embedded}) "
            "SELECT * FROM s ORDER BY d, id LIMIT %(n)s) AS x, q, w"
        )
    elif vector == "bits":
        # The Hamming distance of every unit in scope to the query's sign bits (an index-only
        # scan of ix_message_units or ix_chunk_units, which hold the bits; no index can order by
        # a column of the CTE q), then the nearest SEARCH_RERANK_CANDIDATES re-ranked by cosine
        # distance, their full vectors (and carried columns) read by primary key.
        bits = (f"{table} m, q WHERE {with_bits}" if kind == "message" else
                _chunks_of("conv", "m.id, m.embedding_bits", " AND m.embedding_model = "
                           "%(model)s AND m.embedding_bits IS NOT NULL") + ", q")
        lists.append(
            head("vector") +
            f"(SELECT b.id, e.embedding <=> q.v AS d, {cols('e')} FROM (SELECT m.id FROM "
            f"{bits} ORDER BY m.embedding_bits <~> q.b, m.id "
            f"LIMIT %(r)s) AS b "
            f"CROSS JOIN LATERAL (SELECT * FROM {table} e WHERE e.id = b.id) AS e, q "
            "ORDER BY d, b.id LIMIT %(n)s) AS x, q, w"
        )
    elif vector == "hnsw":
        # The messages' HNSW index of the sign bits with an iterative scan, nearest first; the
        # scope is applied to what it returns, which is read only until SEARCH_RERANK_CANDIDATES
        # units in scope are found (at most SEARCH_HNSW_MAX_SCAN_TUPLES rows); their vectors
        # and carried columns are read by primary key and re-ranked by cosine distance. The
        # ordered scan has no filter: a plan made without the values estimates the scope from
        # ten conversations of the average size, a few rows among many small conversations, and
        # with the scope inside the scan it read every message of the scope by the
        # conversation index and sorted them instead of taking the HNSW index.
        if kind != "message":
            raise ValueError("only messages are read by the HNSW index (_vector_scan)")
        lists.append(
            head("vector") +
            f"(WITH b AS MATERIALIZED (SELECT m.id FROM (SELECT m.id, m.conversation_id, m.role, "
            f"m.embedding_model FROM {table} m "
            "ORDER BY m.embedding_bits <~> (SELECT b FROM q) LIMIT %(hnsw_scan_limit)s) AS m "
            f"WHERE {_MESSAGE_SCOPE} AND m.embedding_model = %(model)s LIMIT %(r)s) "
            f"SELECT b.id, e.embedding <=> q.v AS d, {cols('e')} FROM b "
            f"CROSS JOIN LATERAL (SELECT * FROM {table} e WHERE e.id = b.id) AS e, q "
            "ORDER BY d, b.id LIMIT %(n)s) AS x, q, w"
        )
    if text:
        # Bounded whatever the history: the units that share a word with the query are ranked
        # in the newest conversations holding SEARCH_TEXT_MAX_UNITS units (%(text_conv)s); in
        # the older ones, only the messages holding every word of the query ("text_all", when
        # the scope is larger), found by the GIN index; the older conversations' chunks are
        # summaries of those messages, and are found by the vector lists.
        # Each list ranks the newest SEARCH_TEXT_MAX_MATCHES units that match, at most: in a
        # long history a common word (or a name) matches thousands, and the text rank of each
        # is most of a text list's cost.

        def ranked(match: str, rows: str = source) -> str:
            return (f"(SELECT m.id, {cols('m')}, {_text_rank('m.search_vector', words)} AS ts "
                    f"FROM (SELECT m.* FROM {rows} m, q "
                    f"WHERE {match} ORDER BY m.created_at DESC, m.id LIMIT %(max_matches)s) "
                    "AS m, q, w ORDER BY ts DESC, m.created_at DESC, m.id LIMIT %(n)s) AS x, q, w")

        if kind == "message":
            # The CTE mm holds the matches already.
            match = "TRUE" if text_rows else f"{_MESSAGE_TEXT_SCOPE} AND m.search_vector @@ q.tsq"
            lists.append(head("text") + ranked(match, "mm" if text_rows else table))
        else:  # the CTE cs holds the newest conversations' chunks
            lists.append(head("text") + ranked("m.search_vector @@ q.tsq"))
            if text == "all" and chunk_text_all:
                every = (f"(SELECT m.* FROM {_chunks_of('conv', 'm.*')}, q "
                         "WHERE ts_match_vq(m.search_vector, q.tsq_all))")
                lists.append(head("text_all") + ranked("TRUE", every))
        if text == "all" and kind == "message":
            lists.append(head("text_all") + ranked(f"{scope} AND m.search_vector @@ q.tsq_all"))
    if loops:
        lists.append(
            head("loop") +
            f"(SELECT m.id, {cols('m')} FROM {source} m, q WHERE {scope} "
            "AND m.search_vector @@ q.loop_tsq ORDER BY m.created_at DESC, m.id "
            "LIMIT %(n)s) AS x, q, w"
        )
    if recent and kind == "message":
        # The newest messages of the newest conversations, each read backwards from its end.
        lists.append(
            head("recent") +
            f"(SELECT y.* FROM unnest(%(newest)s::uuid[]) AS nc(id) "
            f"CROSS JOIN LATERAL (SELECT m.id, {cols('m')} FROM {source} m "
            "WHERE m.conversation_id = nc.id AND m.role IN ('user', 'assistant') "
            "ORDER BY m.sequence DESC LIMIT %(n_recent)s) AS y "
            "ORDER BY y.created_at DESC, y.id LIMIT %(n_recent)s) AS x, q, w"
        )
    elif recent:
        lists.append(
            head("recent") +
            f"(SELECT m.id, {cols('m')} FROM {source} m WHERE {scope} "
            "ORDER BY m.created_at DESC, m.id LIMIT %(n_recent)s) AS x, q, w"
        )
    return lists


def _candidates_sql(selects: list[str], *, text_rows: bool = True) -> str:
    """One statement: the query, the newest conversations' chunks and the messages' text matches
    (a CTE no list reads is not run), then every list with the columns that rank its rows."""
    lists = "\nUNION ALL\n".join(f"({select})" for select in selects)
    idf = _NO_IDF_CTE
    if settings.SEARCH_TEXT_IDF:
        rows, where = ("mm", "TRUE") if text_rows else ("{messages}", _MESSAGE_TEXT_SCOPE)
        idf = _IDF_CTE.replace("{df_rows}", rows).replace("{df_where}", where)
    return (f"WITH {_QUERY_CTE},\n{_CHUNK_CTE},\n{_MESSAGE_TEXT_CTE},\n{idf}\n{lists}"
            .format(**_tables()))


@dataclass(slots=True)
class _Unit:
    kind: str
    id: str
    conversation_id: UUID
    range_start: int
    range_end: int
    created_at: float  # seconds since the epoch: ranking reads no datetime
    distance: float | None
    text_score: float | None
    open_loop: bool
    lists: set[str] = field(default_factory=set)
    vector_rank: int | None = None
    text_rank: int | None = None
    score: float = 0.0


def _add_rows(units: dict[tuple, _Unit], rows: list[tuple]) -> None:
    """Each row as a candidate, or as one more list of a candidate read already (a search at
    10,000 units reads about 300 rows: positional arguments, no lookup repeated)."""
    for name, kind, unit_id, conversation_id, start, end, created_at, distance, text_score, \
            open_loop in rows:
        unit = units.get((kind, unit_id))
        if unit is None:
            unit = units[kind, unit_id] = _Unit(kind, unit_id, conversation_id, start, end,
                                                created_at, distance, text_score,
                                                bool(open_loop))
        unit.lists.add(name)
        if distance is not None:
            unit.distance = distance


def _vector_scan(embedded: int, table_rows: int = 0, *, kind: str = "message") -> str:
    """How a vector list of a scope with `embedded` units is read: "exact" (cosine distance of
    every unit: no more than the re-ranking would take), "bits" (Hamming distance of every
    unit's sign bits, the nearest re-ranked by cosine) or "hnsw" (the sign bits' HNSW index
    with pgvector 0.8's iterative scan, re-ranked by cosine).

    The index scan reads the table's units in distance order, all users', until it has
    SEARCH_RERANK_CANDIDATES of the scope: about that many times table_rows / embedded. When
    that is more than SEARCH_HNSW_SCAN_BUDGET (a scope that is a small share of a large table:
    one user's messages among millions), the Hamming scan of the scope is cheaper.

    Chunks are always read by their bits (an index-only scan of ix_chunk_units): they are a
    twentieth of the units, and a plan made without the values (memory_site.apps) never takes
    their HNSW index, whose scope filter (user and legacy) it estimates at one row. At 50,000
    units (2,380 chunks among 200,000) such a plan read every chunk of the scope from the
    table instead, 5 ms (docs/benchmarks.md, seventh session)."""
    if embedded <= settings.SEARCH_RERANK_CANDIDATES:
        return "exact"
    if (kind == "chunk" or embedded <= settings.SEARCH_EXACT_SCAN_MAX_UNITS
            or not iterative_scans_supported()):
        return "bits"
    expected = settings.SEARCH_RERANK_CANDIDATES * max(table_rows, embedded) / embedded
    return "bits" if expected > settings.SEARCH_HNSW_SCAN_BUDGET else "hnsw"


# pgvector 0.8: the HNSW scan goes on until it has r rows that pass the scope (or
# hnsw.max_scan_tuples), instead of filtering ef_search neighbours. Set for the session when
# the connection opens (hnsw_session_settings), for the usual r; otherwise local to the
# transaction of the statement (is_local): one opened for the two (atomic), or the caller's.
_HNSW_SETTINGS = (
    "SELECT set_config('hnsw.iterative_scan', %(hnsw_iterative)s, {local}), "
    "set_config('hnsw.max_scan_tuples', %(hnsw_max_tuples)s, {local}), "
    "set_config('hnsw.ef_search', %(hnsw_ef)s, {local})"
)


def _hnsw_settings(r: int) -> dict[str, str]:
    """The HNSW settings of a vector list that re-ranks `r` units."""
    return {"hnsw_iterative": settings.SEARCH_HNSW_ITERATIVE_SCAN,
            "hnsw_max_tuples": str(settings.SEARCH_HNSW_MAX_SCAN_TUPLES),
            "hnsw_ef": str(min(max(r, 40), 1000))}


def hnsw_session_settings(sender: object, connection: Any, **kwargs: Any) -> None:
    """connection_created: the HNSW settings of a search's first pass (r =
    SEARCH_RERANK_CANDIDATES or SEARCH_CANDIDATES) for the whole session, set in autocommit
    so that no rollback undoes them, and remembered on the connection; a search whose r or
    settings differ sets its own in its transaction (_run). A session behind a pooler in
    transaction mode (DB_PREPARED_STATEMENTS off) may not be the next statement's: nothing
    is set for it."""
    connection.hnsw_session = None
    if not prepares_statements(connection):
        return
    values = _hnsw_settings(max(settings.SEARCH_RERANK_CANDIDATES, settings.SEARCH_CANDIDATES))
    with connection.cursor() as cursor:
        cursor.execute(_HNSW_SETTINGS.format(local="false"), values)
    connection.hnsw_session = values


def _run(sql: str, params: dict[str, object], *, hnsw: bool, r: int) -> list[tuple]:
    """The rows of the candidate statement, prepared on the server at its first run on the
    connection (memory_site.core.sql.prepared_cursor: its parsing is 1.5 ms). An HNSW list
    runs with the session's settings when they are its own (no statement and no transaction
    more: 0.4 ms), else with settings local to its transaction."""
    values = _hnsw_settings(r)
    local = hnsw and getattr(connection, "hnsw_session", None) != values
    with transaction.atomic() if local else nullcontext(), prepared_cursor() as cursor:
        cursor.cursor.adapters.register_dumper(Vector, VectorBinaryDumper)
        if local:
            cursor.execute(_HNSW_SETTINGS.format(local="true"), values)
        cursor.execute(sql, params)
        return cursor.fetchall()


def _fetch_candidates(scope: Scope, params: dict[str, object], n: int,
                      n_recent: int) -> tuple[dict[tuple, _Unit], str]:
    """The candidates by (kind, id), and how the vector lists were read. Each list holds `n`
    units at most, the newest units' list `n_recent`."""
    vector = params["vec"] is not None
    embedded = {"message": scope.messages_embedded, "chunk": scope.chunks_embedded}
    scans = {kind: _vector_scan(embedded[kind], scope.table_rows.get(kind, 0), kind=kind)
             for kind in embedded}
    present = {"message": scope.include_messages and scope.messages > 0,
               "chunk": scope.chunks > 0}
    text_conv = scope.newest(max(settings.SEARCH_TEXT_MAX_UNITS, n))
    text = None
    if params["tsq"]:
        text = "newest" if len(text_conv) == len(scope.conversations) else "all"
    # The newest conversations' messages are matched row by row while they are few; the last of
    # them can be long (an imported conversation of 10,000 messages), and then the GIN index.
    text_units = sum(c.units for c in scope.conversations[:len(text_conv)])
    text_rows = text_units <= 2 * max(settings.SEARCH_TEXT_MAX_UNITS, n)
    # An older conversation's chunk is found by its vector, its words being its messages'; when
    # it may have no vector to be found by (no query vector, chunks not embedded with the
    # current model yet) or its messages are not searched, by all its words too.
    chunk_text_all = (not vector or embedded["chunk"] < scope.chunks
                      or not present["message"])
    selects: list[str] = []
    for kind in ("message", "chunk"):
        if present[kind]:
            selects += _lists(kind, vector=scans[kind] if vector and embedded[kind] else None,
                              text=text, loops=bool(params["loop_tsq"]), recent=True,
                              text_rows=text_rows, words=len(params["lexemes"]),
                              chunk_text_all=chunk_text_all)
    kinds = {kind for kind in present if present[kind]}
    if not selects:
        return {}, "none"
    r = max(settings.SEARCH_RERANK_CANDIDATES, n)
    params = {**params, "n": n, "r": r, "n_recent": n_recent,
              "hnsw_scan_limit": settings.SEARCH_HNSW_MAX_SCAN_TUPLES,
              "max_matches": max(settings.SEARCH_TEXT_MAX_MATCHES, n),
              "newest": [str(pk) for pk in scope.newest(n_recent)],
              "text_conv": [str(pk) for pk in text_conv], "text_n": text_units}
    used = {scans[kind] for kind in kinds if embedded[kind]} if vector else set()
    units: dict[tuple, _Unit] = {}
    _add_rows(units, _run(_candidates_sql(selects, text_rows=text_rows), params,
                          hnsw="hnsw" in used, r=r))
    if not used:
        return units, "none"
    if "hnsw" not in used:
        return units, "bits" if "bits" in used else "exact"
    # When an iterative scan stopped short (hnsw.max_scan_tuples reached before enough rows
    # in scope were found), the exact Hamming scan fills the vector list: the search stays
    # complete.
    completed = False
    for kind in kinds:
        if scans[kind] != "hnsw" or not embedded[kind]:
            continue
        found = sum(1 for u in units.values() if u.kind == kind and "vector" in u.lists)
        if found >= min(n, embedded[kind]):
            continue
        logger.info("iterative scan found %d of %d %s candidates; exact Hamming scan", found,
                    min(n, embedded[kind]), kind)
        sql = _candidates_sql(_lists(kind, vector="bits", text=None, loops=False,
                                     recent=False, words=len(params["lexemes"])),
                              text_rows=text_rows)
        _add_rows(units, _run(sql, params, hnsw=False, r=r))
        completed = True
    return units, "hnsw+bits" if completed else "hnsw"


def _rank(units: list[_Unit], now: float) -> list[_Unit]:
    """Reciprocal rank fusion of the candidates' vector and text ranks, plus recency and the
    open-loop priority; best first (ties: newer, then id)."""
    by_distance = sorted((u for u in units if u.distance is not None),
                         key=lambda u: (u.distance, -u.created_at, u.id))
    for rank, unit in enumerate(by_distance, start=1):
        unit.vector_rank = rank
    by_text = sorted((u for u in units if u.text_score is not None),
                     key=lambda u: (-u.text_score, -u.created_at, u.id))
    for rank, unit in enumerate(by_text, start=1):
        unit.text_rank = rank
    # The settings read once, not once per candidate (a Django setting is a lazy lookup).
    rrf_k = settings.SEARCH_RRF_K
    half_life = max(settings.SEARCH_RECENCY_HALF_LIFE_DAYS, 1e-6)
    chunk_weight = settings.SEARCH_CHUNK_WEIGHT
    recency_weight = settings.SEARCH_RECENCY_WEIGHT
    loop_weight = settings.SEARCH_OPEN_LOOP_WEIGHT
    for unit in units:
        fused = 0.0
        if unit.vector_rank is not None:
            fused += 1.0 / (rrf_k + unit.vector_rank)
        if unit.text_rank is not None:
            fused += 1.0 / (rrf_k + unit.text_rank)
        if unit.kind == "chunk":
            fused *= chunk_weight
        age_days = max(now - unit.created_at, 0.0) / 86400.0
        unit.score = (
            fused
            + recency_weight * math.pow(0.5, age_days / half_life)
            + (loop_weight if unit.open_loop else 0.0)
        )
    return sorted(units, key=lambda u: (-u.score, -u.created_at, u.id))


# --- Places -------------------------------------------------------------------------------------


@dataclass
class _Place:
    units: list[_Unit]
    conversation_id: UUID
    start: int
    end: int
    shown: set[int] = field(default_factory=set)  # message sequences to show
    matched: set[int] = field(default_factory=set)  # of them, the sequences that matched

    def overlaps(self, conversation_id: UUID, start: int, end: int) -> bool:
        return self.conversation_id == conversation_id and start < self.end and self.start < end


def _place_range(unit: _Unit, message_counts: dict[UUID, int]) -> tuple[int, int]:
    if unit.kind == "chunk":
        return unit.range_start, unit.range_end
    start = max(unit.range_start - settings.SEARCH_WINDOW_BEFORE, 0)
    end = min(unit.range_end + settings.SEARCH_WINDOW_AFTER,
              message_counts.get(unit.conversation_id, unit.range_end))
    return start, max(end, unit.range_end)


def _places(ranked: list[_Unit], k: int, message_counts: dict[UUID, int]) -> list[_Place]:
    """The best `k` places. Each of the top `k` units joins the first place its range
    overlaps, or opens one; when they made fewer than k places, the next units that overlap
    no place open the rest (a lower unit never widens a place, so a place cannot creep
    through a conversation)."""
    places: list[_Place] = []
    for position, unit in enumerate(ranked):
        start, end = _place_range(unit, message_counts)
        place = next((p for p in places if p.overlaps(unit.conversation_id, start, end)), None)
        if place is not None and position >= k:
            continue
        if place is None:
            if len(places) == k:
                break
            place = _Place(units=[], conversation_id=unit.conversation_id, start=start, end=end)
            places.append(place)
        place.units.append(unit)
        place.start, place.end = min(place.start, start), max(place.end, end)
        if unit.kind == "message":
            place.shown.update(range(start, end))
            place.matched.add(unit.range_start)
    return places


# The texts of the places only (the candidates carry none): the messages their windows show
# and the contents of their chunks, scoped by user and legacy as the candidates were.
_TEXTS_SQL = """
SELECT m.conversation_id, m.sequence, m.role, m.content
FROM unnest(%(conv)s::uuid[], %(seq)s::int[]) AS w(conversation_id, sequence)
JOIN {messages} m ON m.conversation_id = w.conversation_id AND m.sequence = w.sequence
JOIN {conversations} v ON v.id = m.conversation_id
WHERE m.role IN ('user', 'assistant') AND v.user_id = %(user_id)s AND v.legacy_id = %(legacy_id)s
UNION ALL
SELECT NULL, NULL, c.id::text, c.content FROM {chunks} c
WHERE c.id = ANY(%(chunks)s::uuid[]) AND c.user_id = %(user_id)s AND c.legacy_id = %(legacy_id)s
"""


@dataclass(frozen=True)
class _Texts:
    messages: dict[tuple[UUID, int], tuple[str, str]]  # (conversation, sequence) → role, content
    chunks: dict[str, str]  # chunk id → content


def _place_texts(places: list[_Place], params: dict[str, object]) -> _Texts:
    pairs = [(p.conversation_id, s) for p in places for s in sorted(p.shown)]
    chunk_ids = [u.id for p in places for u in p.units if u.kind == "chunk"]
    texts = _Texts(messages={}, chunks={})
    if not pairs and not chunk_ids:
        return texts
    with prepared_cursor() as cursor:
        cursor.execute(_TEXTS_SQL.format(**_tables()), {
            "conv": [str(c) for c, _ in pairs], "seq": [s for _, s in pairs],
            "chunks": chunk_ids, "user_id": params["user_id"], "legacy_id": params["legacy_id"],
        })
        for conversation_id, sequence, role_or_id, content in cursor.fetchall():
            if conversation_id is None:
                texts.chunks[role_or_id] = content
            else:
                texts.messages[(conversation_id, sequence)] = (role_or_id, content)
    return texts


def render_place(summary: str, messages: list[HitMessage]) -> str:
    """The text of a hit as the agent reads it: the summaries, then the messages as
    `role: content` lines, with `…` where sequences were skipped."""
    lines = [summary] if summary else []
    previous = None
    for message in messages:
        if previous is not None and message.sequence != previous + 1:
            lines.append("…")
        lines.append(f"{message.role}: {message.content}")
        previous = message.sequence
    return "\n".join(lines)


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def _unsaid(summary: str, messages: list[HitMessage]) -> str:
    """A chunk's summary less the sentences that a message shown beside it says word for word.

    The offline summary is extractive (the user's own sentences), so a chunk and a message of
    its range merged into one place would otherwise show the same sentence twice ("Walter sang
    in the choir." then "user: Walter sang in the choir."); the message, with its role, stays.
    A summary none of whose sentences is repeated is kept as it was written."""
    said = "\n".join(_folded(message.content) for message in messages)
    if not summary or not said:
        return summary
    sentences = split_sentences(summary)
    kept = [sentence for sentence in sentences if not re.search(
        rf"(?<!\w){re.escape(_folded(sentence))}(?!\w)", said)]
    return summary if len(kept) == len(sentences) else " ".join(kept)


def _hit(place: _Place, texts: _Texts) -> SearchHit:
    best = place.units[0]
    messages = []
    for sequence in sorted(place.shown):
        found = texts.messages.get((place.conversation_id, sequence))
        if found is None:
            continue
        role, content = found
        if sequence not in place.matched:
            content = truncate_to_tokens(content, settings.SEARCH_NEIGHBOUR_MAX_TOKENS)
        messages.append(HitMessage(sequence=sequence, role=role, content=content))
    summary = "\n".join(part for part in (
        _unsaid(texts.chunks.get(u.id, ""), messages) for u in place.units if u.kind == "chunk"
    ) if part)
    return SearchHit(
        kind=best.kind, id=best.id, content=render_place(summary, messages),
        score=round(best.score, 6), conversation_id=place.conversation_id,
        message_range_start=place.start, message_range_end=place.end,
        created_at=datetime.fromtimestamp(best.created_at, tz=UTC),
        vector_rank=best.vector_rank, text_rank=best.text_rank,
        open_loop=any(u.open_loop for u in place.units), summary=summary,
        messages=tuple(messages), unit_ids=tuple(u.id for u in place.units),
    )


# --- The search ---------------------------------------------------------------------------------


def _embed_query(query: str) -> Vector | None:
    try:
        # As stored vectors are made: EmbeddingError (text only) on a vector of another size.
        return _query_vector(embed_texts([query])[0])
    except EmbeddingError as exc:
        logger.warning("search without vectors, the embedder failed: %s", exc)
        return None


def _warnings(scope: Scope, vec: str | None) -> list[str]:
    warnings = [] if vec is not None else [VECTOR_UNAVAILABLE]
    missing_messages = scope.messages - scope.messages_embedded
    missing_chunks = scope.chunks - scope.chunks_embedded
    if vec is not None and (missing_messages or missing_chunks):
        warnings.append(
            f"{missing_messages} of {scope.messages} messages and {missing_chunks} of "
            f"{scope.chunks} chunks in scope have no vector of the current embedding model "
            "yet (the embedding job or `manage.py reembed` adds it); they are ranked by "
            "text, recency and open loops only"
        )
    return warnings


def search_conversations(
    *,
    user: AbstractBaseUser,
    legacy: Legacy,
    query: str,
    k: int,
    exclude_conversation_ids: list[UUID] | None = None,
    include_messages: bool | None = None,
) -> SearchResult:
    """The top `k` places of the user's conversations about `legacy`, best first.

    The caller has checked membership (facts.selectors.legacy_for_member); the SQL scopes by
    user and legacy itself, so another user's rows can never be returned. When the embedder
    fails, no unit gets a vector rank and the ranking falls back to full-text search,
    recency and open loops rather than failing the request. A query of stop words or
    punctuation only is ranked by recency and open loops, with a warning saying so.
    """
    scope = search_scope(user=user, legacy=legacy,
                         exclude_conversation_ids=exclude_conversation_ids,
                         include_messages=include_messages)
    lexemes = query_lexemes(query, legacy=legacy)
    tsq = query_tsquery(lexemes)
    # A query of stop words or punctuation says nothing to rank by: the newest units come
    # first (and open loops), rather than an error or a ranking by an arbitrary vector.
    vec = _embed_query(query) if tsq else None
    warnings = _warnings(scope, vec) if tsq else [NO_WORDS]
    if scope.total == 0:
        return SearchResult(hits=[], total=0, warnings=warnings)
    params: dict[str, object] = {
        "vec": vec, "model": model_key(), "tsq": tsq, "tsq_all": all_words_tsquery(tsq),
        "lexemes": [_tsquery_literal(lexeme) for lexeme in lexemes],  # each a tsquery
        "loop_tsq": open_loop_tsquery(scope.loops), "norm": settings.SEARCH_TEXT_RANK_NORMALIZATION,
        "conv": [str(pk) for pk in scope.ids], "user_id": user.pk, "legacy_id": legacy.pk,
    }
    message_counts = {c.id: c.message_count for c in scope.conversations}
    now = timezone.now().timestamp()
    n = max(settings.SEARCH_CANDIDATES, k)
    # With words and a vector, a unit that only the newest units' list found has no vector
    # rank and at best a text rank below the text list's n, so it scores little more than its
    # recency (at most SEARCH_RECENCY_WEIGHT); when that is below the fused score of the vector
    # list's k-th unit, it cannot be among the top k and the first pass reads the newest k
    # units only. A widened pass reads n of every list.
    n_recent = n
    rrf_floor = min(1.0, settings.SEARCH_CHUNK_WEIGHT) / (settings.SEARCH_RRF_K + k)
    if (vec is not None and scope.messages_embedded + scope.chunks_embedded >= k
            and rrf_floor > settings.SEARCH_RECENCY_WEIGHT):
        n_recent = k
    while True:
        units, vector_scan = _fetch_candidates(scope, params, n, n_recent)
        places = _places(_rank(list(units.values()), now), k, message_counts)
        # Overlapping units merged into fewer than k places: widen the lists until there are
        # k places or every unit in scope was a candidate.
        if len(places) >= k or len(units) >= scope.total or min(n, n_recent) >= scope.total:
            break
        n = n if n_recent < n else n * 4
        n_recent = n
    texts = _place_texts(places, params)
    return SearchResult(hits=[_hit(place, texts) for place in places], total=scope.total,
                        warnings=warnings, vector_scan=vector_scan)
