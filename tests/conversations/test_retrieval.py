"""Hybrid search over my earlier conversations: scope, completeness, fusion, recency, open loops,
message units with their neighbours, merged places, embedding jobs, the sweep and reembed."""

import io
import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from pgvector import Vector
from pgvector.django import CosineDistance

from conversations import retrieval, tasks
from conversations.checks import check_hnsw_settings
from conversations.embedding import embed_texts, model_key, text_parts
from conversations.models import ConversationChunk, Message
from conversations.retrieval import (
    _HNSW_SETTINGS,
    NO_WORDS,
    SearchHit,
    _vector_scan,
    iterative_scans_supported,
    search_conversations,
)
from conversations.services import conversation_close, message_append, summarization
from conversations.services.embedding import conversation_embed_messages
from memory_site.core.ai import get_embedder
from tests.factories import ConversationFactory, LegacyFactory, import_messages
from tests.support.chunks import chunk_for, cosine_distance, near

pytestmark = pytest.mark.django_db

QUERY = "the lake house where grandma taught us to fish"
DEAD_EMBEDDER = {
    "EMBEDDING_PROVIDER": "openai",
    "EMBEDDING_BASE_URL": "http://127.0.0.1:9/v1",  # nothing listens on the discard port
    "EMBEDDING_MAX_RETRIES": 0,
    "EMBEDDING_TIMEOUT_SECONDS": 2,
}


def _crowd_with_foreign_neighbours(family, query_vector, foreign: int = 300):
    """`foreign` chunks of other users, all closer to the query than any of mine."""
    stranger_legacy = LegacyFactory(created_by=family.stranger)
    fellow = ConversationFactory(user=family.member, legacy=family.legacy)
    outsider = ConversationFactory(user=family.stranger, legacy=stranger_legacy)
    ConversationChunk.objects.bulk_create(
        ConversationChunk(
            conversation=conversation, user=conversation.user, legacy=conversation.legacy,
            content=f"foreign summary {i}", embedding=near(query_vector, 0.004, i),
            embedding_model=model_key(), message_range_start=i * 20,
            message_range_end=i * 20 + 20,
        )
        for i in range(foreign)
        for conversation in [fellow if i % 2 else outsider]
    )


def _my_chunks(family, query_vector, count: int = 5) -> list[ConversationChunk]:
    mine = ConversationFactory(user=family.owner, legacy=family.legacy)
    return [
        chunk_for(mine, i * 20, i * 20 + 20, f"my summary {i}",
                  near(query_vector, 0.03 + 0.01 * i, 900 + i))
        for i in range(count)
    ]


def _messages_near(conversation, query_vector, count: int, noise: float, seed: int,
                   text: str = "far away words") -> list[Message]:
    """`count` messages appended at once, embedded at a controlled distance from the query."""
    rows = import_messages(conversation, [("user", f"{text} {i}") for i in range(count)])
    for i, row in enumerate(rows):
        row.embedding = near(query_vector, noise + 0.002 * i, seed + i)
        row.embedding_model = model_key()
    Message.objects.bulk_update(rows, ["embedding", "embedding_model"])
    return rows


def _exact_ranking(rows, query_vector: list[float]) -> list[str]:
    return [
        str(r.pk)
        for r in sorted(rows, key=lambda r: cosine_distance(list(r.embedding), query_vector))
    ]


def _embed_all(*conversations):
    for conversation in conversations:
        conversation_embed_messages(conversation_id=conversation.pk)


# --- Scope and completeness -----------------------------------------------------------------------


def test_scoped_search_is_complete_with_far_more_foreign_neighbours_than_ef_search(family):
    query_vector = get_embedder().embed([QUERY])[0]
    _crowd_with_foreign_neighbours(family, query_vector, foreign=300)
    mine = _my_chunks(family, query_vector)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE conversations_conversationchunk")
        cursor.execute("SHOW hnsw.ef_search")  # the session's (conversations.retrieval)
        assert int(cursor.fetchone()[0]) < 300

    result = search_conversations(user=family.owner, legacy=family.legacy, query=QUERY, k=5)

    assert result.total == 5
    assert [hit.id for hit in result.hits] == _exact_ranking(mine, query_vector)
    assert {hit.content for hit in result.hits} == {f"my summary {i}" for i in range(5)}
    # k larger than the scope: min(k, units in scope).
    assert len(search_conversations(user=family.owner, legacy=family.legacy, query=QUERY,
                                    k=20).hits) == 5


def test_where_the_naive_hnsw_path_loses_rows_the_search_still_returns_all(family):
    """Make the planner prefer the HNSW index (no btree to filter by, no sequential scans):
    the naive ORM query with pgvector's defaults (no iterative scan) then loses my rows behind
    300 foreign neighbours; the search does not."""
    query_vector = get_embedder().embed([QUERY])[0]
    _crowd_with_foreign_neighbours(family, query_vector, foreign=300)
    mine = _my_chunks(family, query_vector)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'conversations_conversationchunk' "
            "AND indexname NOT IN ('conversations_conversationchunk_pkey', "
            "'ix_conversation_chunks_embed', 'ix_conversation_chunks_range')"
        )
        for (name,) in cursor.fetchall():
            # Rolled back with the test's transaction.
            cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL hnsw.iterative_scan = off")
    naive = ConversationChunk.objects.filter(user=family.owner, legacy=family.legacy).order_by(
        CosineDistance("embedding", query_vector)
    )[:5]
    assert "ix_conversation_chunks_embed" in naive.explain()
    assert len(list(naive)) < 5

    result = search_conversations(user=family.owner, legacy=family.legacy, query=QUERY, k=5)
    assert [hit.id for hit in result.hits] == _exact_ranking(mine, query_vector)


def test_message_units_are_complete_with_foreign_messages_closer_than_mine(family, settings):
    """300 messages of other users (a fellow member of the legacy, a stranger) closer to the
    query than any of mine: my 5 come back in exact cosine order."""
    settings.SEARCH_WINDOW_BEFORE = settings.SEARCH_WINDOW_AFTER = 0
    query_vector = get_embedder().embed([QUERY])[0]
    fellow = ConversationFactory(user=family.member, legacy=family.legacy)
    outsider = ConversationFactory(user=family.stranger,
                                   legacy=LegacyFactory(created_by=family.stranger))
    _messages_near(fellow, query_vector, 150, 0.004, 1)
    _messages_near(outsider, query_vector, 150, 0.004, 500)
    mine = _messages_near(ConversationFactory(user=family.owner, legacy=family.legacy),
                          query_vector, 5, 0.05, 900)

    result = search_conversations(user=family.owner, legacy=family.legacy, query=QUERY, k=5)

    assert (result.total, result.vector_scan) == (5, "exact")
    assert [hit.id for hit in result.hits] == _exact_ranking(mine, query_vector)
    assert all(hit.kind == "message" and hit.vector_rank is not None for hit in result.hits)


def _requires_iterative_scans():
    if not iterative_scans_supported():
        pytest.skip("pgvector < 0.8 has no iterative index scans")


def _sign_bits_then_cosine(rows, query_vector: list[float], rerank: int) -> list[str]:
    """What the bits paths must return, computed here: the `rerank` rows nearest to the query
    by the Hamming distance of their sign bits (ties by id), then those by cosine distance."""
    def bits(vector) -> list[bool]:
        return [x > 0 for x in vector]

    query_bits = bits(query_vector)
    by_bits = sorted(rows, key=lambda r: (
        sum(a != b for a, b in zip(bits(list(r.embedding)), query_bits, strict=True)), str(r.pk)))
    return _exact_ranking(by_bits[:rerank], query_vector)


def test_a_scope_larger_than_the_rerank_is_ranked_by_sign_bits_then_cosine(family, settings):
    """A scope of more embedded units than SEARCH_RERANK_CANDIDATES: the Hamming distance of
    every unit's sign bits in scope (foreign rows closer than mine do not count), the nearest
    re-ranked by exact cosine distance."""
    settings.SEARCH_WINDOW_BEFORE = settings.SEARCH_WINDOW_AFTER = 0
    settings.SEARCH_CANDIDATES = settings.SEARCH_RERANK_CANDIDATES = 8
    query_vector = get_embedder().embed([QUERY])[0]
    _messages_near(ConversationFactory(user=family.member, legacy=family.legacy),
                   query_vector, 300, 0.004, 1)
    mine = _messages_near(ConversationFactory(user=family.owner, legacy=family.legacy),
                          query_vector, 120, 0.05, 900)
    for row in mine:
        row.refresh_from_db()

    result = search_conversations(user=family.owner, legacy=family.legacy, query=QUERY, k=5)

    assert (result.total, result.vector_scan) == (120, "bits")
    expected = _sign_bits_then_cosine(mine, query_vector, 8)
    assert [hit.id for hit in result.hits] == expected[:5]
    # Re-ranking only the nearest by bits is what makes it approximate: not the exact order.
    assert expected[:5] != _exact_ranking(mine, query_vector)[:5]


def test_an_index_scan_that_stops_short_is_completed(family, settings):
    """The HNSW path over the sign bits' index: 300 foreign messages with the query's own sign
    bits fill the index scan's batch and it stops short (as at hnsw.max_scan_tuples); the
    comparison of every unit's bits then fills the list, so the top k are the re-ranked
    nearest of my units."""
    _requires_iterative_scans()
    settings.SEARCH_WINDOW_BEFORE = settings.SEARCH_WINDOW_AFTER = 0
    settings.SEARCH_EXACT_SCAN_MAX_UNITS = 0  # always the index path
    # The first batch of the index scan is hnsw.ef_search (the candidate count) tuples; past
    # max_scan_tuples no second batch is read.
    settings.SEARCH_CANDIDATES = settings.SEARCH_RERANK_CANDIDATES = 100
    settings.SEARCH_HNSW_MAX_SCAN_TUPLES = 10
    # Iterative scans off: the index scan returns its ef_search neighbours and nothing more,
    # as one that reached max_scan_tuples does (which pgvector checks only now and then).
    settings.SEARCH_HNSW_ITERATIVE_SCAN = "off"
    query_vector = get_embedder().embed([QUERY])[0]
    fellow = ConversationFactory(user=family.member, legacy=family.legacy)
    foreign = _messages_near(fellow, query_vector, 300, 0.004, 1)
    for row in foreign:
        # The query's own sign bits (Hamming distance 0): the index's first batch is theirs.
        row.embedding = [v if v > 0 else -abs(v) - 1e-4 for v in row.embedding]
    Message.objects.bulk_update(foreign, ["embedding"])
    mine = _messages_near(ConversationFactory(user=family.owner, legacy=family.legacy),
                          query_vector, 120, 0.05, 900)
    for row in mine:
        row.refresh_from_db()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE conversations_message")
        # Leave the planner only the HNSW index to order by distance.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL hnsw.iterative_scan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("SET LOCAL enable_sort = off")

    result = search_conversations(user=family.owner, legacy=family.legacy, query=QUERY, k=5)

    # The first 100 tuples read are foreign, none mine: short of the 100 the list needs.
    assert result.vector_scan == "hnsw+bits"
    assert [hit.id for hit in result.hits] == _sign_bits_then_cosine(mine, query_vector,
                                                                     100)[:5]


def test_a_text_list_ranks_only_the_newest_matches(family, settings):
    """In a long history a common word matches thousands of units: each text list ranks the
    newest SEARCH_TEXT_MAX_MATCHES (at least SEARCH_CANDIDATES) of them, so an older unit
    holding every word of the query is a candidate only while it is among them."""
    settings.SEARCH_WINDOW_BEFORE = settings.SEARCH_WINDOW_AFTER = 0
    settings.SEARCH_CANDIDATES = 2
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(conversation, [("user", "Rose baked her apple pie recipe every Sunday.")]
                    + [("user", f"We picked apples, day {i}.") for i in range(4)])

    def best() -> int:  # no vectors: ranked by text, recency and open loops
        result = search_conversations(user=family.owner, legacy=family.legacy,
                                      query="apple pie recipe", k=1)
        return result.hits[0].message_range_start

    settings.SEARCH_TEXT_MAX_MATCHES = 500
    assert best() == 0
    settings.SEARCH_TEXT_MAX_MATCHES = 2  # the two newest matches only
    assert best() in (3, 4)


def test_a_long_newest_conversation_is_matched_by_the_gin_index_with_the_same_hits(
        family, settings):
    """The messages' text list matches the newest conversations' rows one by one while they
    hold at most twice SEARCH_TEXT_MAX_UNITS units; past that (one long conversation) it takes
    the GIN index. Either way the same units are matched and ranked."""
    settings.SEARCH_CANDIDATES = 5
    fellow = ConversationFactory(user=family.member, legacy=family.legacy)
    import_messages(fellow, [("user", f"Rose's garden, day {i}.") for i in range(40)])
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(conversation, [("user", f"The garden gate, day {i}.") for i in range(55)]
                    + [("assistant", "Rose planted tulips by the garden gate.")]
                    + [("user", f"Another day, {i}.") for i in range(4)])

    def search(text_max_units: int) -> tuple[list[tuple], str]:
        settings.SEARCH_TEXT_MAX_UNITS = text_max_units
        with CaptureQueriesContext(connection) as queries:
            result = search_conversations(user=family.owner, legacy=family.legacy,
                                          query="tulips by the garden gate", k=3)
        sql = next(q["sql"] for q in queries.captured_queries if "UNION ALL" in q["sql"])
        assert {h.conversation_id for h in result.hits} == {conversation.pk}  # not the member's
        return [(h.id, h.message_range_start, h.text_rank, h.content) for h in result.hits], sql

    rows, rows_sql = search(100)  # 60 units: within 2 × 100
    gin, gin_sql = search(10)  # 60 units: more than 2 × 10
    # The text list's rows: the matches of the CTE mm, or the table by its GIN index.
    assert "FROM mm m, q WHERE TRUE" in rows_sql and "FROM mm m, q WHERE TRUE" not in gin_sql
    assert gin == rows
    assert "Rose planted tulips by the garden gate." in rows[0][3]  # every word of the query


def test_a_rare_word_of_the_query_outranks_a_common_one(family, settings):
    """The text rank weights each query word by its inverse document frequency in the newest
    conversations: the one message naming the okra comes first, though ten newer ones hold the
    query's other word. With ts_rank_cd alone every one-word match ties and the newest win."""
    settings.SEARCH_WINDOW_BEFORE = settings.SEARCH_WINDOW_AFTER = 0  # a hit is its message
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    rows = import_messages(conversation, [("user", "Mr. Okafor grew okra by the fence.")]
                           + [("user", f"The garden was lovely in {1950 + i}.") for i in range(10)])
    now = timezone.now()
    for row in rows:  # the okra message the oldest, without vectors: only words and recency
        Message.objects.filter(pk=row.pk).update(
            created_at=now - timedelta(days=30) + timedelta(minutes=row.sequence))

    def best_by_text() -> int:
        result = search_conversations(user=family.owner, legacy=family.legacy,
                                      query="okra in the garden", k=3)
        return next(h.message_range_start for h in result.hits if h.text_rank == 1)

    assert best_by_text() == 0
    settings.SEARCH_TEXT_IDF = False
    assert best_by_text() == 10


def test_a_small_share_of_a_large_table_is_scanned_by_its_bits_not_the_index(settings):
    """The index scan reads about rerank × table rows ÷ scope of all users' rows to find the
    scope's nearest: one user's 3,000 chunks among a million would cost 33,000 rows read, the
    Hamming scan of the scope 3,000."""
    _requires_iterative_scans()
    settings.SEARCH_RERANK_CANDIDATES, settings.SEARCH_EXACT_SCAN_MAX_UNITS = 100, 2000
    settings.SEARCH_HNSW_SCAN_BUDGET = 5000
    assert _vector_scan(3000, 1_000_000) == "bits"
    assert _vector_scan(3000, 150_000) == "hnsw"  # 5,000 rows: within the budget
    assert _vector_scan(3000, 0) == "hnsw"  # a table never analysed: the scope is all of it
    assert _vector_scan(2000, 1_000_000) == "bits"  # small enough to compare every unit
    assert _vector_scan(100, 1_000_000) == "exact"
    # Chunks are always compared by their bits: a generic plan never takes their HNSW index.
    assert _vector_scan(3000, 0, kind="chunk") == "bits"
    assert _vector_scan(100, 0, kind="chunk") == "exact"


def test_the_hnsw_path_with_iterative_scans_keeps_the_scope(family, settings):
    _requires_iterative_scans()
    settings.SEARCH_WINDOW_BEFORE = settings.SEARCH_WINDOW_AFTER = 0
    settings.SEARCH_EXACT_SCAN_MAX_UNITS = 0
    settings.SEARCH_RERANK_CANDIDATES = 2  # 5 units: more than the re-ranking, the index path
    query_vector = get_embedder().embed([QUERY])[0]
    fellow = ConversationFactory(user=family.member, legacy=family.legacy)
    _messages_near(fellow, query_vector, 300, 0.004, 1)
    mine = _messages_near(ConversationFactory(user=family.owner, legacy=family.legacy),
                          query_vector, 5, 0.05, 900)

    result = search_conversations(user=family.owner, legacy=family.legacy, query=QUERY, k=5)

    # The index's graph over 300 near-identical sign bits may leave some of mine unreached; the
    # Hamming scan of the scope then completes the list ("hnsw+bits"): the same hits.
    assert result.vector_scan in ("hnsw", "hnsw+bits")
    assert {hit.id for hit in result.hits} == {str(m.pk) for m in mine}


def _plan_of_candidates(search, params_of=lambda params: params) -> str:
    """The plan of the candidate statement a `search()` runs, made as the project's prepared
    statements are: without the values (plan_cache_mode force_generic_plan)."""
    captured = []
    run = retrieval._run

    def capture(sql, params, **kwargs):
        captured.append((sql, params))
        return run(sql, params, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(retrieval, "_run", capture)
        search()
    sql, params = captured[0]
    names: list[str] = []

    def number(match: re.Match) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    prepared = re.sub(r"%\((\w+)\)s", number, sql)
    values = [params[name].to_text() if isinstance(params[name], Vector) else params[name]
              for name in names]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute(f"PREPARE candidates AS {prepared}")
        cursor.execute(f"EXPLAIN EXECUTE candidates({', '.join(['%s'] * len(names))})", values)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("DEALLOCATE candidates")
    return plan


def test_the_hnsw_list_takes_the_index_among_many_small_conversations(family, settings):
    """A plan made without the values estimates the scope from ten conversations of the
    average size: among many small conversations, a few rows. When the HNSW list filtered by
    the scope inside its ordered scan, such a plan read every message of the scope by the
    conversation index and sorted them all (at 10,000 units among 310,000 messages in 15,000
    conversations: 8.5 ms against 0.9). The ordered scan now has no filter the planner could
    estimate, and the scope is applied to what it returns."""
    _requires_iterative_scans()
    settings.SEARCH_EXACT_SCAN_MAX_UNITS = 0  # the HNSW path for my 60 messages
    settings.SEARCH_HNSW_SCAN_BUDGET = 10**9
    query_vector = get_embedder().embed([QUERY])[0]
    for i in range(300):  # a fellow member's 300 conversations of 4 messages
        _messages_near(ConversationFactory(user=family.member, legacy=family.legacy),
                       query_vector, 4, 0.3, 10 * i)
    mine = _messages_near(ConversationFactory(user=family.owner, legacy=family.legacy),
                          query_vector, 60, 0.05, 9000)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE conversations_message")

    plan = _plan_of_candidates(lambda: search_conversations(
        user=family.owner, legacy=family.legacy, query=QUERY, k=5))

    assert "Index Scan using ix_message_embedding_bits" in plan, plan
    result = search_conversations(user=family.owner, legacy=family.legacy, query=QUERY, k=5)
    # (Completed by the Hamming scan when the graph of these near-identical bits leaves some of
    # mine unreached; the index's order is approximate, so the hits are mine, not a fixed list.)
    assert result.vector_scan in ("hnsw", "hnsw+bits")
    assert len(result.hits) == 5
    assert {hit.conversation_id for hit in result.hits} == {mine[0].conversation_id}


def test_search_never_returns_another_users_rows_of_the_same_legacy(family):
    fellow = ConversationFactory(user=family.member, legacy=family.legacy)
    chunk_for(fellow, 0, 20, "Rose kept bees behind the lake house.")
    message_append(conversation=fellow, role="user", content="Rose kept bees behind the lake house.")
    message_append(conversation=fellow, role="assistant", content="Bees behind the lake house!")
    _embed_all(fellow)
    other = ConversationFactory(user=family.owner, legacy=LegacyFactory(created_by=family.owner))
    chunk_for(other, 0, 20, "Rose kept bees behind the lake house.")
    message_append(conversation=other, role="user", content="Rose kept bees behind the lake house.")

    result = search_conversations(user=family.owner, legacy=family.legacy, query="bees", k=5)

    assert result.hits == [] and result.total == 0


def test_k_units_that_do_not_overlap_are_k_hits(family, settings):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(conversation, [("user" if i % 2 == 0 else "assistant", f"Line {i} of the day.")
                                   for i in range(40)])
    settings.SEARCH_WINDOW_BEFORE = settings.SEARCH_WINDOW_AFTER = 0
    settings.SEARCH_CANDIDATES = 3  # fewer candidates per list than k: the lists widen

    result = search_conversations(user=family.owner, legacy=family.legacy, query="day", k=10)

    assert (len(result.hits), result.total) == (10, 40)
    assert len({hit.message_range_start for hit in result.hits}) == 10


def test_the_short_newest_list_widens_when_its_units_make_too_few_places(family, settings):
    # With words and a vector the first pass reads only the newest k units; here the vector
    # list's four messages make one place and the newest four messages (unembedded, no word of
    # the query) two more, so the widened pass must read more of the newest units.
    settings.SEARCH_WINDOW_BEFORE, settings.SEARCH_WINDOW_AFTER = 0, 1
    query_vector = get_embedder().embed([QUERY])[0]
    older = ConversationFactory(user=family.owner, legacy=family.legacy,
                                last_message_at=timezone.now() - timedelta(days=10))
    near_rows = _messages_near(older, query_vector, 4, 0.01, 40)
    Message.objects.filter(pk__in=[r.pk for r in near_rows]).update(
        created_at=timezone.now() - timedelta(days=10))
    newer = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(newer, [("user", f"Plain note {i}.") for i in range(5)],
                    last_message_at=timezone.now())

    result = search_conversations(user=family.owner, legacy=family.legacy, query=QUERY, k=4)

    assert (len(result.hits), result.total) == (4, 9)
    assert [(h.conversation_id, h.message_range_start, h.message_range_end)
            for h in result.hits][0] == (older.pk, 0, 4)
    assert sorted((h.message_range_start, h.message_range_end) for h in result.hits
                  if h.conversation_id == newer.pk) == [(0, 2), (2, 4), (4, 5)]


# --- Ranking ----------------------------------------------------------------------------------------


def test_the_text_list_of_a_large_scope_takes_all_words_only_in_older_conversations(
        family, settings):
    """Bounded text work: units sharing one word with the query are ranked in the newest
    conversations holding SEARCH_TEXT_MAX_UNITS units; in older ones only units holding every
    word of the query are text candidates."""
    settings.SEARCH_WINDOW_BEFORE = settings.SEARCH_WINDOW_AFTER = 0
    settings.SEARCH_CANDIDATES = 3
    older = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(older, [("user", "The orchard behind the barn."),
                            ("user", "The orchard down by the river.")],
                    last_message_at=timezone.now() - timedelta(days=30))
    newest = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(newest, [("user", "A river walk on Sunday."),
                             *[("user", f"Filler number {i}.") for i in range(4)]],
                    last_message_at=timezone.now())

    def hits() -> list[str]:
        result = search_conversations(user=family.owner, legacy=family.legacy,
                                      query="orchard river", k=3)
        return [hit.messages[0].content for hit in result.hits]

    settings.SEARCH_TEXT_MAX_UNITS = 5  # the newest conversation's units
    capped = hits()
    assert capped[:2] == ["The orchard down by the river.", "A river walk on Sunday."]
    assert capped[2].startswith("Filler number")  # a recency candidate
    settings.SEARCH_TEXT_MAX_UNITS = 7  # the whole scope: every unit sharing a word
    assert hits() == ["The orchard down by the river.", "A river walk on Sunday.",
                      "The orchard behind the barn."]


def test_an_older_conversations_chunk_is_a_candidate_by_its_vector_or_all_its_words(
        family, settings):
    """Chunks summarise messages that are units themselves: the chunks' text list reads
    those of the newest conversations (SEARCH_TEXT_MAX_UNITS units) only; an older
    conversation's chunk is a candidate by its vector (its sign bits read from
    ix_chunk_units), and then ranked by its words too. When a chunk may have no vector to be
    found by (not embedded yet, or no query vector) or the messages are not searched, the older
    conversations' chunks holding every word are a text list of their own."""
    settings.SEARCH_WINDOW_BEFORE = settings.SEARCH_WINDOW_AFTER = 0
    settings.SEARCH_CANDIDATES = 3
    older = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(older, [("user", f"Old filler {i}.") for i in range(4)],
                    last_message_at=timezone.now() - timedelta(days=30))
    chunk = chunk_for(older, 0, 2, "She planted the orchard down by the river.")
    newest = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(newest, [("user", f"Filler number {i}.") for i in range(5)],
                    last_message_at=timezone.now())

    def chunk_hit(**kwargs: object) -> tuple[SearchHit, bool]:
        """The chunk's hit, and whether older chunks were a text list of their own."""
        with CaptureQueriesContext(connection) as queries:
            result = search_conversations(user=family.owner, legacy=family.legacy,
                                          query="orchard river", k=3, **kwargs)
        listed = any("SELECT 'text_all' AS list, 'chunk'" in query["sql"]
                     for query in queries.captured_queries)
        return next(hit for hit in result.hits if hit.id == str(chunk.pk)), listed

    settings.SEARCH_TEXT_MAX_UNITS = 5  # the newest conversation's units
    hit, listed = chunk_hit()
    assert ((hit.vector_rank, hit.text_rank), listed) == ((1, 1), False)
    hit, listed = chunk_hit(include_messages=False)
    assert ((hit.vector_rank, hit.text_rank), listed) == ((1, 1), True)
    ConversationChunk.objects.filter(pk=chunk.pk).update(embedding=None)
    hit, listed = chunk_hit()
    assert ((hit.vector_rank, hit.text_rank), listed) == ((None, 1), True)
    settings.SEARCH_TEXT_MAX_UNITS = 10  # the whole scope: the chunks' text list reads it
    hit, listed = chunk_hit()
    assert ((hit.vector_rank, hit.text_rank), listed) == ((None, 1), False)


def test_full_text_and_vector_ranks_are_fused(family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    both = chunk_for(conversation, 0, 20, "She baked rhubarb pie every Sunday.")
    words_only = chunk_for(
        conversation, 20, 40, "Rhubarb grew by the shed.",
        embedding=near([1.0] + [0.0] * 1023, 0.01, 1),
    )
    unrelated = chunk_for(conversation, 40, 60, "He drove a green tractor to town.")

    hits = search_conversations(
        user=family.owner, legacy=family.legacy, query="rhubarb pie on Sunday", k=3
    ).hits

    assert [hit.id for hit in hits] == [str(both.pk), str(words_only.pk), str(unrelated.pk)]
    assert hits[0].vector_rank == 1 and hits[0].text_rank == 1
    assert hits[1].text_rank == 2
    assert hits[2].text_rank is None


def test_recency_breaks_a_tie_between_equally_relevant_chunks(family):
    old_conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    new_conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    text = "Rose sang in the church choir."
    vector = get_embedder().embed([text])[0]
    old = chunk_for(old_conversation, 0, 20, text, vector)
    new = chunk_for(new_conversation, 0, 20, text, vector)
    ConversationChunk.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(days=90)
    )

    hits = search_conversations(user=family.owner, legacy=family.legacy, query="choir", k=2).hits

    assert [hit.id for hit in hits] == [str(new.pk), str(old.pk)]
    assert hits[0].score > hits[1].score


def test_an_open_loop_lifts_the_unit_that_can_close_it(family, settings):
    earlier = ConversationFactory(user=family.owner, legacy=family.legacy)
    current = ConversationFactory(
        user=family.owner, legacy=family.legacy,
        open_loops=["I need to find her apple pie recipe"],
    )
    recipe = chunk_for(earlier, 0, 20, "Her apple pie recipe used lard and a pinch of nutmeg.")
    garden = chunk_for(earlier, 20, 40, "Her garden had apple trees and roses.")

    settings.SEARCH_OPEN_LOOP_WEIGHT = 0.0
    hits = search_conversations(
        user=family.owner, legacy=family.legacy, query="apple trees", k=2,
        exclude_conversation_ids=[current.pk],
    ).hits
    assert hits[0].id == str(garden.pk)  # the better match wins without the loop weight…

    settings.SEARCH_OPEN_LOOP_WEIGHT = 0.008  # …and loses with the default one.
    hits = search_conversations(
        user=family.owner, legacy=family.legacy, query="apple trees", k=2,
        exclude_conversation_ids=[current.pk],
    ).hits
    assert hits[0].id == str(recipe.pk) and hits[0].open_loop is True
    assert hits[1].open_loop is False


def test_the_current_conversation_can_be_excluded(family):
    earlier = ConversationFactory(user=family.owner, legacy=family.legacy)
    current = ConversationFactory(user=family.owner, legacy=family.legacy)
    kept = chunk_for(earlier, 0, 20, "The fishing trip of 1972.")
    chunk_for(current, 0, 20, "The fishing trip of 1972, again.")
    message_append(conversation=current, role="user", content="The fishing trip of 1972.")

    result = search_conversations(
        user=family.owner, legacy=family.legacy, query="fishing trip", k=5,
        exclude_conversation_ids=[current.pk],
    )

    assert [hit.id for hit in result.hits] == [str(kept.pk)]
    assert result.total == 1


@pytest.mark.parametrize("query", ["the and of", "?!…", "what was it, then?"])
def test_a_query_of_stopwords_or_punctuation_returns_the_newest_units(family, query):
    older = ConversationFactory(user=family.owner, legacy=family.legacy)
    newer = ConversationFactory(user=family.owner, legacy=family.legacy)
    old_chunk = chunk_for(older, 0, 20, "Rose and the lake.")
    ConversationChunk.objects.filter(pk=old_chunk.pk).update(
        created_at=timezone.now() - timedelta(days=10)
    )
    message_append(conversation=newer, role="user", content="Rose swam in the lake.")
    message_append(conversation=newer, role="assistant", content="Every summer?")
    Message.objects.filter(conversation=newer, sequence=0).update(
        created_at=timezone.now() - timedelta(days=1)
    )

    result = search_conversations(user=family.owner, legacy=family.legacy, query=query, k=3)

    assert result.warnings == [NO_WORDS]
    assert result.total == 3
    assert [(hit.kind, hit.vector_rank, hit.text_rank) for hit in result.hits] == [
        ("message", None, None), ("chunk", None, None),
    ]
    # The newest message opens its place; its neighbour joins it.
    assert result.hits[0].content == "user: Rose swam in the lake.\nassistant: Every summer?"
    assert result.hits[0].id == str(Message.objects.get(conversation=newer, sequence=1).pk)


# --- Message units: both roles, neighbours, merged places -----------------------------------------


def test_every_message_of_both_roles_is_a_unit_with_its_neighbours(family, settings):
    settings.SEARCH_WINDOW_BEFORE = settings.SEARCH_WINDOW_AFTER = 1
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    said = [
        ("user", "We drove up to the cabin every August."),
        ("assistant", "Did Rose have a favourite spot there?"),
        ("user", "The dock. She read there for hours."),
        ("assistant", "The blue canoe you mentioned was tied at that dock, I think."),
        ("user", "Yes, Grandpa painted it himself."),
        ("assistant", "What a lovely detail."),
    ]
    for role, content in said:
        message_append(conversation=conversation, role=role, content=content)
    _embed_all(conversation)

    result = search_conversations(user=family.owner, legacy=family.legacy,
                                  query="blue canoe", k=1)

    [hit] = result.hits
    assert result.total == 6
    assert (hit.kind, hit.message_range_start, hit.message_range_end) == ("message", 2, 5)
    assert hit.id == str(Message.objects.get(conversation=conversation, sequence=3).pk)
    assert hit.content == (
        "user: The dock. She read there for hours.\n"
        "assistant: The blue canoe you mentioned was tied at that dock, I think.\n"
        "user: Yes, Grandpa painted it himself."
    )
    assert [m.sequence for m in hit.messages] == [2, 3, 4]


def test_overlapping_hits_of_one_place_are_merged(family, settings):
    settings.SEARCH_WINDOW_BEFORE = settings.SEARCH_WINDOW_AFTER = 1
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(conversation, [
        ("user", "Small talk about the weather."),
        ("assistant", "It was a rainy week."),
        ("user", "Rose kept a beehive behind the barn."),
        ("assistant", "The beehive! How many bees?"),
        ("user", "Thousands of bees, and honey every autumn."),
        ("assistant", "Nothing else today."),
        ("user", "More small talk."),
        ("assistant", "Goodbye for now."),
        ("user", "Her bees won a prize at the county fair."),
        ("assistant", "A prize for bees!"),
    ])
    _embed_all(conversation)

    result = search_conversations(user=family.owner, legacy=family.legacy,
                                  query="beehive bees honey", k=2)

    first, second = result.hits
    # Messages 2, 3 and 4 match best: the windows of the top two overlap, so they are one
    # place of four messages; the second place is message 8's, not another window around 2-4.
    assert len(first.unit_ids) == 2
    assert (first.message_range_start, first.message_range_end) in {(1, 5), (2, 6), (1, 6)}
    assert first.message_range_end - first.message_range_start == 4
    assert [m.sequence for m in first.messages] == list(
        range(first.message_range_start, first.message_range_end))
    assert second.message_range_start in (7, 8) and second.message_range_end == 10
    assert second.content.endswith("user: Her bees won a prize at the county fair.\n"
                                   "assistant: A prize for bees!")


def test_a_chunk_and_a_message_of_its_range_are_one_place(family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(conversation, [("user" if i % 2 == 0 else "assistant", f"Filler {i}.")
                                   for i in range(20)])
    Message.objects.filter(conversation=conversation, sequence=7).update(
        content="The cellar smelled of apples and coal."
    )
    chunk = chunk_for(conversation, 0, 20, "They talked about the cellar of the old house.")
    _embed_all(conversation)

    result = search_conversations(user=family.owner, legacy=family.legacy,
                                  query="cellar apples", k=3)

    first = result.hits[0]
    assert (first.message_range_start, first.message_range_end) == (0, 20)
    assert {str(chunk.pk)} < set(first.unit_ids)
    assert first.summary == "They talked about the cellar of the old house."
    assert "assistant: The cellar smelled of apples and coal." in first.content
    assert all((h.message_range_start, h.message_range_end) != (0, 20) for h in result.hits[1:])


def _archived_conversation(family, django_capture_on_commit_callbacks, said):
    """A closed conversation, archived and embedded by the real jobs (offline providers)."""
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    with django_capture_on_commit_callbacks(execute=True):
        for role, content in said:
            message_append(conversation=conversation, role=role, content=content)
        conversation_close(conversation=conversation)
    return conversation



def test_a_summary_sentence_a_shown_message_says_is_shown_once(
        family, django_capture_on_commit_callbacks):
    # The new-user walkthrough: the archive's extractive summary is the user's one sentence,
    # and the chunk and the message are one place; the sentence was shown twice.
    walter = "Walter sang in the church choir every Sunday."
    conversation = _archived_conversation(family, django_capture_on_commit_callbacks,
                                          [("user", walter)])
    chunk = ConversationChunk.objects.get(conversation=conversation)
    assert chunk.content == walter

    [hit] = search_conversations(user=family.owner, legacy=family.legacy,
                                 query="Walter choir", k=3).hits

    assert (hit.summary, hit.content) == ("", f"user: {walter}")
    assert str(chunk.pk) in hit.unit_ids
    assert (hit.message_range_start, hit.message_range_end, hit.range_label) == (
        0, 1, "message 0")


def test_only_the_summary_sentences_no_shown_message_says_stay(family, settings):
    settings.SEARCH_WINDOW_BEFORE = settings.SEARCH_WINDOW_AFTER = 1
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(conversation, [("user" if i % 2 == 0 else "assistant", f"Filler {i}.")
                                   for i in range(20)])
    Message.objects.filter(conversation=conversation, sequence=8).update(
        content="The cellar smelled of apples  and coal. We hid there in storms."
    )
    chunk_for(conversation, 0, 20,
              "The cellar smelled of apples and coal.\nThey talked about the old house.")
    _embed_all(conversation)

    first = search_conversations(user=family.owner, legacy=family.legacy,
                                 query="cellar apples", k=3).hits[0]

    assert first.summary == "They talked about the old house."
    assert first.content.lower().count("smelled of apples") == 1
    assert "user: The cellar smelled of apples  and coal. We hid there in storms." in first.content


def _filler(count):
    return [("user", f"Mom was born in Dayton in 1931, she often said, part {i}.")
            if i % 2 == 0 else ("assistant", "Thank you for telling me.") for i in range(count)]


def test_a_detail_only_the_agent_said_in_an_archived_conversation_is_found(
        family, django_capture_on_commit_callbacks):
    said = [*_filler(12),
            ("user", "What did she do after the war?"),
            ("assistant", "You told me she worked as a switchboard operator in Toledo."),
            *_filler(30)]
    conversation = _archived_conversation(family, django_capture_on_commit_callbacks, said)
    chunks = ConversationChunk.objects.filter(conversation=conversation)
    assert chunks.exists()
    assert not any("switchboard" in chunk.content for chunk in chunks)
    assert not Message.objects.filter(conversation=conversation, embedding_model="").exists()

    result = search_conversations(user=family.owner, legacy=family.legacy,
                                  query="Where was the switchboard job?", k=3)

    assert "switchboard operator in Toledo" in result.hits[0].content
    assert result.hits[0].message_range_start <= 13 < result.hits[0].message_range_end
    assert result.warnings == []


# --- Embedding: the job after append, the sweep, long texts, another model -------------------------


def test_messages_are_embedded_by_a_job_after_append(family, django_capture_on_commit_callbacks):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        message, _ = message_append(conversation=conversation, role="user", content="Hello there.")
    message.refresh_from_db()
    assert (message.embedding, message.embedding_model) == (None, "")  # not on the request path
    for callback in callbacks:
        callback()
    message.refresh_from_db()
    assert message.embedding_model == model_key()
    assert list(message.embedding) == pytest.approx(embed_texts(["Hello there."])[0], abs=1e-6)
    # System and tool messages are not units and are never embedded.
    with django_capture_on_commit_callbacks(execute=True):
        system, _ = message_append(conversation=conversation, role="system", content="Be kind.")
    system.refresh_from_db()
    assert (system.embedding, system.embedding_model) == (None, "")


@pytest.mark.django_db(transaction=True)
def test_a_job_leaves_a_message_another_transaction_holds_instead_of_waiting_for_it():
    """Two embedding jobs of one conversation at once (two appends in a row, two workers)
    could deadlock, each locking its rows in the order of its join; a job now locks in id
    order and skips a row another transaction holds: it neither waits nor deadlocks, and that
    row is embedded by its holder or the next run."""
    conversation = ConversationFactory()
    import_messages(conversation, [("user", "The first."), ("assistant", "The second.")])
    held, free = Message.objects.filter(conversation=conversation).order_by("sequence")
    other = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        other.set_autocommit(False)
        with other.cursor() as cursor:
            cursor.execute("SELECT 1 FROM conversations_message WHERE id = %s FOR UPDATE",
                           [held.pk])
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '5s'")  # a wait would fail the test, not hang
        result = conversation_embed_messages(conversation_id=conversation.pk)
        assert (result.embedded, result.remaining) == (1, 1)
        assert Message.objects.get(pk=free.pk).embedding_model == model_key()
        assert Message.objects.get(pk=held.pk).embedding_model == ""
    finally:
        other.rollback()
        other.close()
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert conversation_embed_messages(conversation_id=conversation.pk).remaining == 0
    assert Message.objects.get(pk=held.pk).embedding_model == model_key()


def test_an_embedder_outage_leaves_messages_for_the_sweep(family, settings,
                                                          django_capture_on_commit_callbacks):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    for name, value in DEAD_EMBEDDER.items():
        setattr(settings, name, value)
    with django_capture_on_commit_callbacks(execute=True):
        message_append(conversation=conversation, role="user", content="Rose kept bees.")
        message_append(conversation=conversation, role="assistant", content="Honey bees?")
    assert Message.objects.filter(conversation=conversation, embedding_model="").count() == 2

    settings.EMBEDDING_PROVIDER = "hashing"
    result = search_conversations(user=family.owner, legacy=family.legacy, query="bees", k=3)
    assert result.warnings == [
        "2 of 2 messages and 0 of 0 chunks in scope have no vector of the current embedding "
        "model yet (the embedding job or `manage.py reembed` adds it); they are ranked by "
        "text, recency and open loops only"
    ]
    assert result.hits[0].vector_rank is None and result.hits[0].text_rank == 1

    assert tasks.embedding_sweep() == {"enqueued": 1, "already_queued": 0}
    assert not Message.objects.filter(conversation=conversation, embedding_model="").exists()
    assert tasks.embedding_sweep() == {"enqueued": 0, "already_queued": 0}
    result = search_conversations(user=family.owner, legacy=family.legacy, query="bees", k=3)
    assert result.warnings == [] and result.hits[0].vector_rank == 1


def test_the_embedding_job_stops_at_its_limit_and_queues_the_rest(family, settings):
    settings.EMBEDDING_JOB_MAX_MESSAGES = 3
    settings.EMBEDDING_BATCH_SIZE = 2
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(conversation, [("user", f"Message {i}.") for i in range(7)])

    # In sync mode the follow-up jobs run at once: 3 + 3 + 1.
    assert tasks.embed_conversation(str(conversation.pk)) == {
        "conversation_id": str(conversation.pk), "embedded": 3, "remaining": 4, "error": "",
    }
    assert not Message.objects.filter(conversation=conversation, embedding_model="").exists()


def test_a_message_longer_than_the_embedder_limit_is_embedded_in_parts(settings):
    settings.EMBEDDING_MAX_TOKENS = 4
    text = "Rose kept bees behind the old red barn near the lake."
    parts = text_parts(text)
    assert len(parts) > 1 and "".join(part for part, _ in parts) == text
    assert all(tokens <= 4 for _, tokens in parts)

    vectors = get_embedder().embed([part for part, _ in parts])
    summed = [sum(tokens * v[i] for (_, tokens), v in zip(parts, vectors, strict=True))
              for i in range(len(vectors[0]))]
    norm = sum(x * x for x in summed) ** 0.5
    assert embed_texts([text])[0] == pytest.approx([x / norm for x in summed], abs=1e-9)
    settings.EMBEDDING_MAX_TOKENS = 8000
    assert embed_texts([text])[0] == pytest.approx(get_embedder().embed([text])[0], abs=1e-9)


def test_vectors_of_another_model_are_never_ranked_with_the_current_ones(family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    current = chunk_for(conversation, 0, 20, "The orchard behind the house.")
    other = chunk_for(conversation, 20, 40, "The orchard by the river.")
    ConversationChunk.objects.filter(pk=other.pk).update(embedding_model="openai/other/1024")

    result = search_conversations(user=family.owner, legacy=family.legacy, query="orchard", k=2)

    ranks = {hit.id: hit.vector_rank for hit in result.hits}
    assert ranks == {str(current.pk): 1, str(other.pk): None}
    assert "0 of 0 messages and 1 of 2 chunks in scope have no vector" in result.warnings[0]


def test_reembed_changes_the_dimensions_and_embeds_everything(family, settings):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(conversation, [("user", "Rose kept bees."), ("assistant", "Honey!"),
                                   ("system", "Not a unit.")])
    chunk_for(conversation, 0, 3, "They talked about bees.")
    settings.EMBEDDING_DIMENSIONS = 8
    out = io.StringIO()

    with connection.cursor() as cursor:
        # The test's transaction defers its foreign key checks; ALTER TABLE needs none pending.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    call_command("reembed", "--batch-size", "1", stdout=out)

    text = out.getvalue()
    assert "Embedding model: hashing/rotated/8" in text
    assert "The vector columns hold 1024 (messages) and 1024 (chunks) dimensions; " \
           "EMBEDDING_DIMENSIONS is 8." in text
    assert "Embedded 2 messages and 1 chunks with hashing/rotated/8." in text
    rows = [*Message.objects.filter(role__in=["user", "assistant"]),
            *ConversationChunk.objects.all()]
    assert {r.embedding_model for r in rows} == {"hashing/rotated/8"}
    assert {len(r.embedding) for r in rows} == {8}
    assert Message.objects.get(role="system").embedding is None
    result = search_conversations(user=family.owner, legacy=family.legacy, query="bees", k=2)
    assert result.warnings == [] and result.hits[0].vector_rank is not None

    out = io.StringIO()
    call_command("reembed", stdout=out)  # resumable: nothing left
    assert "nothing to do" in out.getvalue()
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes "
                       "WHERE indexname IN ('ix_message_embedding', 'ix_conversation_chunks_embed')")
        # The chunks keep their HNSW index of full vectors (seed 000); messages have none.
        assert [(name, "USING hnsw (embedding vector_cosine_ops)" in definition)
                for name, definition in cursor.fetchall()] == [
            ("ix_conversation_chunks_embed", True)]
        # The sign bits follow the dimensions, with the indexes that hold them.
        cursor.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                       "WHERE attname = 'embedding_bits' AND attrelid = ANY(ARRAY["
                       "'conversations_message'::regclass, "
                       "'conversations_conversationchunk'::regclass])")
        assert [row[0] for row in cursor.fetchall()] == ["bit(8)", "bit(8)"]
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes "
                       "WHERE indexdef LIKE '%embedding_bits%' ORDER BY indexname")
        indexes = dict(cursor.fetchall())
    assert sorted(indexes) == ["ix_chunk_units", "ix_message_embedding_bits", "ix_message_units"]
    assert "hnsw (embedding_bits bit_hamming_ops)" in indexes["ix_message_embedding_bits"]
    assert "INCLUDE (id, embedding_bits)" in indexes["ix_message_units"]
    assert ("(user_id, legacy_id, conversation_id, embedding_model) INCLUDE (id, embedding_bits)"
            in indexes["ix_chunk_units"])
    message = Message.objects.filter(role="user").values_list("embedding", "embedding_bits").get()
    assert message[1] == "".join("1" if x > 0 else "0" for x in message[0])


def test_reembed_writes_again_the_vectors_made_before_the_hashing_rotation(family, settings):
    """Same dimensions, an older key (the sparse vectors before the rotation): no column
    changes, every vector written again with the current key, and ranked again."""
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(conversation, [("user", "Rose kept bees."), ("assistant", "Honey!")])
    chunk_for(conversation, 0, 2, "They talked about bees.")
    old_key = f"hashing/{settings.EMBEDDING_DIMENSIONS}"
    Message.objects.update(embedding=[1.0] + [0.0] * (settings.EMBEDDING_DIMENSIONS - 1),
                           embedding_model=old_key)
    ConversationChunk.objects.update(embedding_model=old_key)
    result = search_conversations(user=family.owner, legacy=family.legacy, query="bees", k=2)
    assert "2 of 2 messages and 1 of 1 chunks in scope have no vector" in result.warnings[0]
    out = io.StringIO()

    call_command("reembed", stdout=out)

    text = out.getvalue()
    assert "Changing the columns" not in text
    assert "Embedded 2 messages and 1 chunks with hashing/rotated/" in text
    message = Message.objects.get(role="user")
    assert message.embedding_model == model_key()
    assert list(message.embedding) == pytest.approx(embed_texts(["Rose kept bees."])[0],
                                                    abs=1e-6)
    result = search_conversations(user=family.owner, legacy=family.legacy, query="bees", k=2)
    assert result.warnings == [] and result.hits[0].vector_rank is not None


def test_archived_chunks_get_the_model_key(family, django_capture_on_commit_callbacks):
    conversation = _archived_conversation(family, django_capture_on_commit_callbacks,
                                          _filler(24))
    assert set(ConversationChunk.objects.filter(conversation=conversation)
               .values_list("embedding_model", flat=True)) == {model_key()}
    assert summarization.archive_range_due(conversation=conversation, final=True) is None


def test_the_search_statements_are_prepared_at_their_first_run_and_planned_once(family):
    """The search's statements run on a server-binding cursor (memory_site.core.sql
    .prepared_cursor) that has psycopg prepare them at their first run on the connection, however
    many other statements ran between (psycopg counts runs in an LRU that Django's own queries
    fill); every run uses the one plan made without values (a generic plan, memory_site.apps),
    and the hits are those of the unprepared statement, planned for its values. Without
    prepared statements (DB_PREPARED_STATEMENTS off) nothing is prepared."""
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    import_messages(conversation, [("user", f"Rose's garden, day {i}.") for i in range(6)]
                    + [("assistant", "The tulips by the gate were hers.")])
    conversation_embed_messages(conversation_id=conversation.pk)

    def run() -> list[tuple]:
        result = search_conversations(user=family.owner, legacy=family.legacy,
                                      query="tulips in the garden", k=2)
        return [(h.id, h.content, h.score) for h in result.hits]

    def candidates_plans() -> list[tuple[int, int]]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT generic_plans, custom_plans FROM pg_prepared_statements "
                           "WHERE statement LIKE '%%binary_quantize%%'")
            return cursor.fetchall()

    raw = connection.connection
    threshold = raw.prepare_threshold
    assert threshold is not None  # DB_PREPARED_STATEMENTS' default
    try:
        raw.prepare_threshold = None
        first = run()
        assert len(first) == 2
        assert candidates_plans() == []
    finally:
        raw.prepare_threshold = threshold
    assert run() == first
    assert candidates_plans() == [(1, 0)]  # prepared at its first run, planned once
    for turn in range(11):
        for i in range(120):  # other queries between, each its own text
            Message.objects.filter(conversation=conversation, sequence=1000 * turn + i).exists()
        assert run() == first
    assert candidates_plans() == [(12, 0)]  # the same statement and plan at every run


@pytest.mark.django_db(transaction=True)
def test_the_hnsw_settings_are_the_sessions_and_a_search_of_another_r_sets_its_own(
        family, settings):
    """A new connection gets the HNSW settings of a search's first pass for its session
    (conversations.retrieval.hnsw_session_settings), so that an HNSW list runs without a
    statement and a transaction more; a search whose settings differ sets its own, local to
    its transaction. (Committed data: the test's connection is opened again, with these
    settings, not those of whichever test opened it.)"""
    _requires_iterative_scans()
    connection.close()
    session = ("SELECT current_setting('hnsw.iterative_scan'), "
               "current_setting('hnsw.ef_search'), current_setting('hnsw.max_scan_tuples')")
    expected = (settings.SEARCH_HNSW_ITERATIVE_SCAN,
                str(max(settings.SEARCH_RERANK_CANDIDATES, settings.SEARCH_CANDIDATES)),
                str(settings.SEARCH_HNSW_MAX_SCAN_TUPLES))
    with connection.cursor() as cursor:
        cursor.execute(session)
        assert cursor.fetchone() == expected
    assert connection.hnsw_session == {"hnsw_iterative": expected[0], "hnsw_ef": expected[1],
                                       "hnsw_max_tuples": expected[2]}
    def set_configs(queries: CaptureQueriesContext) -> list[str]:
        return [query["sql"] for query in queries.captured_queries if "set_config" in query["sql"]]

    settings.SEARCH_WINDOW_BEFORE = settings.SEARCH_WINDOW_AFTER = 0
    settings.SEARCH_EXACT_SCAN_MAX_UNITS = 0  # the HNSW path
    query_vector = get_embedder().embed([QUERY])[0]
    mine = _messages_near(ConversationFactory(user=family.owner, legacy=family.legacy),
                          query_vector, 60, 0.05, 900)
    with CaptureQueriesContext(connection) as queries:
        first = search_conversations(user=family.owner, legacy=family.legacy, query=QUERY, k=5)
    assert first.vector_scan == "hnsw"
    assert set_configs(queries) == []
    settings.SEARCH_RERANK_CANDIDATES = 55  # another ef_search than the session's
    with CaptureQueriesContext(connection) as queries:
        second = search_conversations(user=family.owner, legacy=family.legacy, query=QUERY, k=5)
    assert second.vector_scan == "hnsw"
    assert set_configs(queries) == [_HNSW_SETTINGS.format(local="true")]
    assert {hit.id for hit in first.hits} <= {str(m.pk) for m in mine}
    assert {hit.id for hit in second.hits} == {hit.id for hit in first.hits}
    with connection.cursor() as cursor:  # local to the search's own transaction
        cursor.execute(session)
        assert cursor.fetchone() == expected


def test_hnsw_settings_that_pgvector_would_refuse_stop_the_checks(settings):
    """They are set for every connection's session: a bad one is a system check error, not a
    warning dropped at connect time."""
    assert check_hnsw_settings(None) == []
    settings.SEARCH_HNSW_ITERATIVE_SCAN = "strict"
    settings.SEARCH_HNSW_MAX_SCAN_TUPLES = 0
    assert [problem.id for problem in check_hnsw_settings(None)] == [
        "conversations.E004", "conversations.E005"]
