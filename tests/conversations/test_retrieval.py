"""Hybrid search over my earlier conversations: scope, completeness, fusion, recency, open loops."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from pgvector.django import CosineDistance

from conversations.models import ConversationChunk
from conversations.retrieval import search_conversations, search_params, search_sql
from conversations.services import message_append
from memory_site.core.ai import get_embedder
from tests.factories import ConversationFactory, LegacyFactory
from tests.support.chunks import chunk_for, cosine_distance, near

pytestmark = pytest.mark.django_db

QUERY = "the lake house where grandma taught us to fish"


def _crowd_with_foreign_neighbours(family, query_vector, foreign: int = 300):
    """`foreign` chunks of other users, all closer to the query than any of mine."""
    stranger_legacy = LegacyFactory(created_by=family.stranger)
    fellow = ConversationFactory(user=family.member, legacy=family.legacy)
    outsider = ConversationFactory(user=family.stranger, legacy=stranger_legacy)
    ConversationChunk.objects.bulk_create(
        ConversationChunk(
            conversation=conversation, user=conversation.user, legacy=conversation.legacy,
            content=f"foreign summary {i}", embedding=near(query_vector, 0.004, i),
            message_range_start=i * 20, message_range_end=i * 20 + 20,
        )
        for i in range(foreign)
        for conversation in [fellow if i % 2 else outsider]
    )


def _my_chunks(family, query_vector, count: int = 5) -> list[ConversationChunk]:
    mine = ConversationFactory(user=family.owner, legacy=family.legacy)
    return [
        chunk_for(mine, i * 20, i * 20 + 20, f"my summary {i}", near(query_vector, 0.03 + 0.01 * i, 900 + i))
        for i in range(count)
    ]


def _exact_ranking(chunks: list[ConversationChunk], query_vector: list[float]) -> list[str]:
    return [
        str(c.pk)
        for c in sorted(chunks, key=lambda c: cosine_distance(list(c.embedding), query_vector))
    ]


def _explain(params: dict) -> str:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + search_sql(), params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_scoped_search_is_complete_with_far_more_foreign_neighbours_than_ef_search(family):
    query_vector = get_embedder().embed([QUERY])[0]
    _crowd_with_foreign_neighbours(family, query_vector, foreign=300)
    mine = _my_chunks(family, query_vector)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE conversations_conversationchunk")
        cursor.execute("SHOW hnsw.ef_search")
        assert int(cursor.fetchone()[0]) == 40

    result = search_conversations(user=family.owner, legacy=family.legacy, query=QUERY, k=5)

    assert result.total == 5
    assert [hit.id for hit in result.hits] == _exact_ranking(mine, query_vector)
    assert {hit.content for hit in result.hits} == {f"my summary {i}" for i in range(5)}
    # k larger than the scope: min(k, rows in scope).
    assert len(search_conversations(user=family.owner, legacy=family.legacy, query=QUERY, k=20).hits) == 5
    plan = _explain(search_params(user=family.owner, legacy=family.legacy, query=QUERY, k=5))
    assert "ix_conversation_chunks_embed" not in plan


def test_where_the_naive_hnsw_path_loses_rows_the_search_still_returns_all(family):
    """Make the planner prefer the HNSW index (no btree to filter by, no sequential scans):
    the naive ORM query then loses my rows behind 300 foreign neighbours; the search does not."""
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
    naive = ConversationChunk.objects.filter(user=family.owner, legacy=family.legacy).order_by(
        CosineDistance("embedding", query_vector)
    )[:5]
    assert "ix_conversation_chunks_embed" in naive.explain()
    assert len(list(naive)) < 5

    result = search_conversations(user=family.owner, legacy=family.legacy, query=QUERY, k=5)
    assert [hit.id for hit in result.hits] == _exact_ranking(mine, query_vector)
    params = search_params(user=family.owner, legacy=family.legacy, query=QUERY, k=5)
    assert "ix_conversation_chunks_embed" not in _explain(params)


def test_search_never_returns_another_users_rows_of_the_same_legacy(family):
    fellow = ConversationFactory(user=family.member, legacy=family.legacy)
    chunk_for(fellow, 0, 20, "Rose kept bees behind the lake house.")
    message_append(conversation=fellow, role="user", content="Rose kept bees behind the lake house.")
    other = ConversationFactory(user=family.owner, legacy=LegacyFactory(created_by=family.owner))
    chunk_for(other, 0, 20, "Rose kept bees behind the lake house.")

    result = search_conversations(user=family.owner, legacy=family.legacy, query="bees", k=5)

    assert result.hits == [] and result.total == 0


def test_full_text_and_vector_ranks_are_fused(family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    both = chunk_for(conversation, 0, 20, "She baked rhubarb pie every Sunday.")
    words_only = chunk_for(
        conversation, 20, 40, "Rhubarb grew by the shed.", embedding=near([1.0] + [0.0] * 1023, 0.01, 1)
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
    ConversationChunk.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=90))

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


def test_unarchived_user_messages_are_units_with_an_exclusive_end(family):
    archived = ConversationFactory(user=family.owner, legacy=family.legacy)
    for i in range(24):
        message_append(
            conversation=archived, role="user" if i % 2 == 0 else "assistant",
            content=f"Message {i} about the old mill." if i != 22 else "The mill wheel was red.",
        )
    chunk_for(archived, 0, 20, "They talked about the old mill.")
    short = ConversationFactory(user=family.owner, legacy=family.legacy)
    message_append(conversation=short, role="user", content="Rose's mill wheel was painted red.")
    message_append(conversation=short, role="assistant", content="The red mill wheel, lovely.")

    result = search_conversations(user=family.owner, legacy=family.legacy, query="red mill wheel", k=10)

    units = {(hit.kind, hit.conversation_id, hit.message_range_start, hit.message_range_end)
             for hit in result.hits}
    assert units == {
        ("chunk", archived.pk, 0, 20),
        ("message", archived.pk, 20, 21),
        ("message", archived.pk, 22, 23),
        ("message", short.pk, 0, 1),
    }
    # A message has no stored embedding: it competes on its words only.
    messages = [hit for hit in result.hits if hit.kind == "message"]
    assert all(hit.vector_rank is None for hit in messages)
    assert messages[0].content in {"The mill wheel was red.", "Rose's mill wheel was painted red."}
    assert messages[0].text_rank == 1
    chunks_only = search_conversations(
        user=family.owner, legacy=family.legacy, query="red mill wheel", k=10,
        include_messages=False,
    )
    assert [(h.kind, h.message_range_start) for h in chunks_only.hits] == [("chunk", 0)]


def test_the_current_conversation_can_be_excluded(family):
    earlier = ConversationFactory(user=family.owner, legacy=family.legacy)
    current = ConversationFactory(user=family.owner, legacy=family.legacy)
    kept = chunk_for(earlier, 0, 20, "The fishing trip of 1972.")
    chunk_for(current, 0, 20, "The fishing trip of 1972, again.")

    hits = search_conversations(
        user=family.owner, legacy=family.legacy, query="fishing trip", k=5,
        exclude_conversation_ids=[current.pk],
    ).hits

    assert [hit.id for hit in hits] == [str(kept.pk)]


def test_a_query_of_stopwords_only_still_ranks_by_vector(family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    chunk_for(conversation, 0, 20, "Rose and the lake.")

    result = search_conversations(user=family.owner, legacy=family.legacy, query="the and of", k=3)

    assert result.total == 1 and result.hits[0].text_rank is None

