"""GET /api/ai/legacies/{id}/search: body, bad input and who may search."""

import uuid

import pytest

from conversations.models import ConversationChunk, Message
from conversations.retrieval import NO_WORDS
from conversations.services import conversation_close, message_append
from tests.conftest import api_client_for
from tests.factories import ConversationFactory
from tests.support.chunks import WALTER_SAID, chunk_for, walter_archived_then_corrected

pytestmark = pytest.mark.django_db


def _url(legacy_id) -> str:
    return f"/api/ai/legacies/{legacy_id}/search"


def test_search_answers_hits_with_ranges_and_total(family, owner_client):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    chunk = chunk_for(conversation, 0, 20, "Rose taught the grandchildren to fish at the lake.")

    response = owner_client.get(_url(family.legacy.pk), {"q": "fishing at the lake", "k": 2})

    assert response.status_code == 200
    body = response.json()
    assert body["total"] == 1
    [hit] = body["results"]
    assert set(hit) == {
        "id", "kind", "content", "score", "conversation_id", "message_range_start",
        "message_range_end", "created_at",
    }
    assert (hit["id"], hit["kind"], hit["content"]) == (
        str(chunk.pk), "chunk", "Rose taught the grandchildren to fish at the lake."
    )
    assert (hit["conversation_id"], hit["message_range_start"], hit["message_range_end"]) == (
        str(conversation.pk), 0, 20
    )
    assert hit["score"] > 0



def test_a_sentence_of_the_summary_and_its_message_is_one_line_of_a_hit(
        family, owner_client, django_capture_on_commit_callbacks):
    said = WALTER_SAID
    walter = walter_archived_then_corrected(family, django_capture_on_commit_callbacks)
    chunk = ConversationChunk.objects.get(conversation=walter)

    response = owner_client.get(_url(family.legacy.pk), {"q": "Walter church choir"})

    assert response.status_code == 200
    [hit] = [hit for hit in response.json()["results"] if hit["conversation_id"] == str(walter.pk)]
    assert (hit["message_range_start"], hit["message_range_end"]) == (0, 1)
    assert hit["id"] in {str(chunk.pk), str(Message.objects.get(conversation=walter).pk)}
    assert hit["content"] == f"user: {said}"


def test_k_defaults_to_the_setting(family, owner_client, settings):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    for i in range(5):
        chunk_for(conversation, i * 20, i * 20 + 20, f"Summary {i} of the lake.")

    body = owner_client.get(_url(family.legacy.pk), {"q": "lake"}).json()
    assert (len(body["results"]), body["total"]) == (3, 5)
    settings.SEARCH_DEFAULT_K = 4
    assert len(owner_client.get(_url(family.legacy.pk), {"q": "lake"}).json()["results"]) == 4


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({}, "q", "A search needs a query."),
        ({"q": "   "}, "q", "A search needs a query."),
        ({"q": "x" * 1001}, "q", "At most 1000 characters."),
        ({"q": "lake", "k": 0}, "k", "Must be between 1 and 20."),
        ({"q": "lake", "k": 21}, "k", "Must be between 1 and 20."),
        ({"q": "lake", "k": "many"}, "k", "Must be a whole number."),
    ],
)
def test_bad_input_is_a_400_with_the_field(family, owner_client, params, field, message):
    response = owner_client.get(_url(family.legacy.pk), params)

    assert response.status_code == 400
    assert response.json() == {
        "detail": f"{field}: {message}", "code": "invalid", "errors": {field: [message]},
    }


def test_anonymous_is_401(family, anon_client):
    response = anon_client.get(_url(family.legacy.pk), {"q": "lake"})
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"


@pytest.mark.parametrize("who", ["stranger", "other_member"])
def test_a_non_member_gets_404_like_a_missing_legacy(family, who):
    client = api_client_for(getattr(family, who))
    response = client.get(_url(family.legacy.pk), {"q": "lake"})
    missing = client.get(_url(uuid.uuid4()), {"q": "lake"})

    assert response.status_code == missing.status_code == 404
    assert response.json() == missing.json() == {"detail": "Not found.", "code": "not_found"}


def test_a_fellow_member_searches_only_their_own_conversations(family, member_client):
    owners = ConversationFactory(user=family.owner, legacy=family.legacy)
    chunk_for(owners, 0, 20, "Rose's secret lake spot.")

    response = member_client.get(_url(family.legacy.pk), {"q": "lake spot"})

    assert response.status_code == 200
    assert response.json() == {"results": [], "total": 0, "warnings": []}


def test_search_falls_back_to_text_when_the_embedder_fails(family, settings):
    """An embedding outage degrades the ranking, it does not fail the request."""
    conversation = ConversationFactory(legacy=family.legacy, user=family.owner)
    message_append(conversation=conversation, role="user", content="Rose kept bees behind the barn.")
    settings.EMBEDDING_PROVIDER = "openai"
    settings.EMBEDDING_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
    settings.EMBEDDING_MAX_RETRIES = 0
    settings.EMBEDDING_TIMEOUT_SECONDS = 2
    response = api_client_for(family.owner).get(
        f"/api/ai/legacies/{family.legacy.pk}/search", {"q": "bees", "k": 3}
    )
    assert response.status_code == 200
    body = response.json()
    assert body["warnings"] == [
        "vector search unavailable (the embedding provider failed); ranked by text only"
    ]
    assert [hit["content"] for hit in body["results"]] == ["user: Rose kept bees behind the barn."]


def _archived(family, capture, said):
    """A closed conversation, archived and embedded by the real jobs (offline providers)."""
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    with capture(execute=True):
        for role, content in said:
            message_append(conversation=conversation, role=role, content=content)
        conversation_close(conversation=conversation)
    return conversation


FILLER = [("user", f"Rose was born in Dayton in 1931, nursed at St. Mary's Hospital for forty "
                   f"years and sang alto in the Westminster church choir, part {i}.")
          if i % 2 == 0
          else ("assistant", "Thank you for telling me.") for i in range(30)]


def test_a_detail_only_the_agent_said_in_an_archived_conversation_is_found(
        family, owner_client, django_capture_on_commit_callbacks):
    conversation = _archived(family, django_capture_on_commit_callbacks, [
        *FILLER[:10],
        ("user", "Do you remember what her first car was?"),
        ("assistant", "You said it was a green 1948 Hudson she called Betsy."),
        *FILLER[10:],
    ])
    chunks = ConversationChunk.objects.filter(conversation=conversation)
    assert chunks.exists() and not any("Hudson" in c.content for c in chunks)

    body = owner_client.get(_url(family.legacy.pk), {"q": "What was the Hudson called?",
                                                      "k": 3}).json()

    first = body["results"][0]
    assert "assistant: You said it was a green 1948 Hudson she called Betsy." in first["content"]
    assert first["conversation_id"] == str(conversation.pk)
    assert first["message_range_start"] <= 11 < first["message_range_end"]
    assert body["warnings"] == []


def test_a_detail_the_summary_left_out_is_found(family, owner_client,
                                                django_capture_on_commit_callbacks):
    conversation = _archived(family, django_capture_on_commit_callbacks, [
        *FILLER[:10],
        ("user", "By the way, the spare key is kept under the blue flowerpot."),
        ("assistant", "Under the flowerpot, noted."),
        *FILLER[10:],
    ])
    chunks = ConversationChunk.objects.filter(conversation=conversation)
    assert chunks.exists() and not any("flowerpot" in c.content for c in chunks)

    body = owner_client.get(_url(family.legacy.pk), {"q": "where was the spare key",
                                                      "k": 3}).json()

    assert "user: By the way, the spare key is kept under the blue flowerpot." in \
        body["results"][0]["content"]
    assert body["total"] == Message.objects.filter(conversation=conversation).count() \
        + chunks.count()


def test_a_query_of_stop_words_answers_the_newest_units(family, owner_client):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    message_append(conversation=conversation, role="user", content="Rose loved the lake.")

    response = owner_client.get(_url(family.legacy.pk), {"q": "the of and ?!"})

    assert response.status_code == 200
    body = response.json()
    assert body["warnings"] == [NO_WORDS]
    assert [hit["content"] for hit in body["results"]] == ["user: Rose loved the lake."]
