"""The facts API (seed 000's paths): bodies, filters, bad input, duplicates, and the
authorization matrix of every fact route."""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.fields import DateTimeField

from conversations.models import Conversation
from facts.models import LegacyFact
from tests.conftest import api_client_for
from tests.factories import (
    ConversationFactory,
    LegacyFactFactory,
    LegacyFactory,
    MembershipFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

CATEGORIES = "personality, hobby, relationship, milestone, occupation, preference, habit, other"


def _when(value) -> str:
    return DateTimeField().to_representation(value)


def _fact_json(fact: LegacyFact, *, is_mine: bool) -> dict:
    fact.refresh_from_db()
    return {
        "id": str(fact.pk),
        "legacy_id": str(fact.legacy_id),
        "category": fact.category,
        "content": fact.content,
        "visibility": fact.visibility,
        "author": fact.user.username,
        "is_mine": is_mine,
        "source_conversation_id": (
            str(fact.source_conversation_id) if fact.source_conversation_id else None
        ),
        "source_range_start": fact.source_range_start,
        "source_range_end": fact.source_range_end,
        "extracted_at": _when(fact.extracted_at),
        "updated_at": _when(fact.updated_at),
        "is_current": fact.superseded_by_id is None,
        "superseded_by": str(fact.superseded_by_id) if fact.superseded_by_id else None,
        "superseded_at": _when(fact.superseded_at) if fact.superseded_at else None,
        "corrects": [],
    }


def _snapshot() -> list[tuple]:
    return list(
        LegacyFact.objects.order_by("pk").values_list(
            "pk", "legacy_id", "user_id", "category", "content", "visibility", "updated_at"
        )
    )


@pytest.fixture
def facts(family):
    """Owner: a private and a shared fact; member: a private and a shared fact."""
    conversation = ConversationFactory(legacy=family.legacy, user=family.owner)
    return {
        "owner_private": LegacyFactFactory(
            legacy=family.legacy, user=family.owner, category="hobby",
            content="She kept bees behind the barn.", source_conversation=conversation,
            source_range_start=0, source_range_end=20,
        ),
        "owner_shared": LegacyFactFactory(
            legacy=family.legacy, user=family.owner, category="occupation",
            content="She taught piano for forty years.", visibility="shared",
        ),
        "member_private": LegacyFactFactory(
            legacy=family.legacy, user=family.member, category="habit",
            content="She never missed the morning news.",
        ),
        "member_shared": LegacyFactFactory(
            legacy=family.legacy, user=family.member, category="relationship",
            content="She called her sister every Sunday.", visibility="shared",
        ),
        "other_legacy": LegacyFactFactory(
            legacy=family.other_legacy, user=family.other_member, category="hobby",
            content="Walter restored old radios.", visibility="shared",
        ),
    }


# --- GET /api/ai/legacies/{legacy_id}/facts --------------------------------------------------


def test_list_shows_my_facts_and_every_member_shared_fact(family, facts, owner_client):
    response = owner_client.get(f"/api/ai/legacies/{family.legacy.pk}/facts")
    assert response.status_code == 200
    assert response.json() == {
        "facts": [
            _fact_json(facts["owner_private"], is_mine=True),
            _fact_json(facts["owner_shared"], is_mine=True),
            _fact_json(facts["member_shared"], is_mine=False),
        ],
        "total": 3,
        "limit": 50,
        "offset": 0,
    }
    assert response.json()["facts"][0]["source_conversation_id"] == str(
        facts["owner_private"].source_conversation_id
    )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?category=hobby", ["owner_private"]),
        ("?visibility=shared", ["owner_shared", "member_shared"]),
        ("?mine=true", ["owner_private", "owner_shared"]),
        ("?mine=true&visibility=shared", ["owner_shared"]),
        ("?category=relationship&mine=false", ["member_shared"]),
        ("?q=PIANO", ["owner_shared"]),
    ],
)
def test_list_filters(family, facts, owner_client, query, expected):
    response = owner_client.get(f"/api/ai/legacies/{family.legacy.pk}/facts{query}")
    assert response.status_code == 200
    assert [f["id"] for f in response.json()["facts"]] == [str(facts[k].pk) for k in expected]
    assert response.json()["total"] == len(expected)


@pytest.mark.parametrize(
    ("query", "errors"),
    [
        ("?category=gossip", {"category": ['"gossip" is not a valid choice.']}),
        ("?visibility=public", {"visibility": ['"public" is not a valid choice.']}),
        ("?mine=perhaps", {"mine": ["Must be a valid boolean."]}),
    ],
)
def test_list_rejects_an_invalid_filter(family, facts, owner_client, query, errors):
    response = owner_client.get(f"/api/ai/legacies/{family.legacy.pk}/facts{query}")
    assert response.status_code == 400
    field, messages = next(iter(errors.items()))
    assert response.json() == {
        "detail": f"{field}: {messages[0]}", "code": "invalid", "errors": errors,
    }


def test_list_works_with_a_trailing_slash_too(family, facts, owner_client):
    response = owner_client.get(f"/api/ai/legacies/{family.legacy.pk}/facts/")
    assert response.status_code == 200
    assert response.json()["total"] == 3


# --- POST /api/ai/legacies/{legacy_id}/facts -------------------------------------------------


def test_add_a_fact_by_hand(family, member_client):
    response = member_client.post(
        f"/api/ai/legacies/{family.legacy.pk}/facts",
        {"category": "preference", "content": "  She took her tea   with honey. "},
        format="json",
    )
    assert response.status_code == 201
    fact = LegacyFact.objects.get()
    assert (fact.user, fact.legacy, fact.visibility) == (family.member, family.legacy, "private")
    assert response.json() == {
        **_fact_json(fact, is_mine=True), "content": "She took her tea with honey.",
        "duplicate": False,
    }


def test_add_a_shared_fact(family, member_client, owner_client):
    response = member_client.post(
        f"/api/ai/legacies/{family.legacy.pk}/facts",
        {"category": "hobby", "content": "She played bridge on Thursdays.", "visibility": "shared"},
        format="json",
    )
    assert response.status_code == 201
    seen = owner_client.get(f"/api/ai/legacies/{family.legacy.pk}/facts").json()["facts"]
    assert [(f["content"], f["author"], f["is_mine"]) for f in seen] == [
        ("She played bridge on Thursdays.", "member", False)
    ]


def test_adding_a_duplicate_of_mine_writes_nothing_and_says_so(family, facts, owner_client):
    before = _snapshot()
    response = owner_client.post(
        f"/api/ai/legacies/{family.legacy.pk}/facts",
        {"category": "other", "content": "she kept BEES behind the barn"},
        format="json",
    )
    assert response.status_code == 200
    assert response.json() == {
        **_fact_json(facts["owner_private"], is_mine=True),
        "duplicate": True,
        "message": "You already have this fact; nothing was added.",
    }
    assert _snapshot() == before


@pytest.mark.parametrize("content", [
    "\uff53he kept BEES behind the barn",  # a full-width s
    "she kept be\u200bes be\u200dhind the barn",
])
def test_a_duplicate_is_found_whatever_a_reader_cannot_see(family, facts, owner_client, content):
    before = _snapshot()
    response = owner_client.post(f"/api/ai/legacies/{family.legacy.pk}/facts",
                                 {"category": "other", "content": content}, format="json")
    assert (response.status_code, response.json()["duplicate"]) == (200, True)
    assert _snapshot() == before


@pytest.mark.parametrize("first, second", [
    ("Mae's score was +1 that day", "Mae's score was -1 that day"),
    ("Mae loved C++ at school", "Mae loved C# at school"),
    ("Her cake said ❤❤❤", "Her cake said 🎂🎂🎂"),
])
def test_symbols_make_another_fact(family, owner_client, first, second):
    for content in (first, second):
        response = owner_client.post(f"/api/ai/legacies/{family.legacy.pk}/facts",
                                     {"category": "other", "content": content}, format="json")
        assert (response.status_code, response.json()["duplicate"]) == (201, False)


def test_a_fact_of_only_invisible_characters_is_refused(family, facts, owner_client):
    before = _snapshot()
    for content in ("\u200b\u200b\u200b\u200b", "\u3164\u3164\u3164", "\u2800\u2800\u2800"):
        response = owner_client.post(f"/api/ai/legacies/{family.legacy.pk}/facts",
                                     {"category": "other", "content": content,
                                      "visibility": "shared"}, format="json")
        assert response.status_code == 400
        assert "content" in response.json()["errors"]
    assert _snapshot() == before
    stored = owner_client.post(f"/api/ai/legacies/{family.legacy.pk}/facts",
                               {"category": "other", "content": "She kept\u200b hens."},
                               format="json")
    assert (stored.status_code, stored.json()["content"]) == (201, "She kept hens.")


def test_a_fact_that_duplicates_someone_else_is_still_mine_to_add(family, facts, owner_client):
    response = owner_client.post(
        f"/api/ai/legacies/{family.legacy.pk}/facts",
        {"category": "relationship", "content": "She called her sister every Sunday."},
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["duplicate"] is False
    assert LegacyFact.objects.filter(content="She called her sister every Sunday.").count() == 2


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({"category": "gossip", "content": "She was tall."},
         {"category": ['"gossip" is not a valid choice.']}),
        ({"category": "hobby", "content": "ab"}, {"content": ["Must be 3–500 characters."]}),
        ({"category": "hobby", "content": "   a  "}, {"content": ["Must be 3–500 characters."]}),
        ({"category": "hobby", "content": "x" * 501}, {"content": ["Must be 3–500 characters."]}),
        ({"category": "hobby", "content": "She was tall.", "visibility": "public"},
         {"visibility": ['"public" is not a valid choice.']}),
        ({"content": "She was tall."}, {"category": ["This field is required."]}),
    ],
)
def test_add_rejects_bad_input_and_writes_nothing(family, facts, owner_client, body, errors):
    before = _snapshot()
    response = owner_client.post(
        f"/api/ai/legacies/{family.legacy.pk}/facts", body, format="json"
    )
    assert response.status_code == 400
    field, messages = next(iter(errors.items()))
    assert response.json() == {
        "detail": f"{field}: {messages[0]}", "code": "invalid", "errors": errors,
    }
    assert _snapshot() == before


def test_content_limits_are_settings(family, owner_client, settings):
    settings.FACT_MIN_CHARS = 10
    response = owner_client.post(
        f"/api/ai/legacies/{family.legacy.pk}/facts",
        {"category": "hobby", "content": "She sang."},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["errors"] == {"content": ["Must be 10–500 characters."]}


def test_a_fact_with_exactly_500_characters_is_accepted(family, owner_client):
    response = owner_client.post(
        f"/api/ai/legacies/{family.legacy.pk}/facts",
        {"category": "other", "content": "x" * 500},
        format="json",
    )
    assert response.status_code == 201


# --- PATCH /api/ai/facts/{id}/visibility, PATCH and DELETE /api/ai/facts/{id} ---------------------


def test_author_shares_and_unshares_a_fact(family, facts, owner_client, member_client):
    fact = facts["owner_private"]
    response = owner_client.patch(
        f"/api/ai/facts/{fact.pk}/visibility", {"visibility": "shared"}, format="json"
    )
    assert response.status_code == 200
    assert response.json() == _fact_json(fact, is_mine=True)
    assert response.json()["visibility"] == "shared"
    seen = member_client.get(f"/api/ai/legacies/{family.legacy.pk}/facts?mine=false").json()
    assert str(fact.pk) in [f["id"] for f in seen["facts"]]

    response = owner_client.patch(
        f"/api/ai/facts/{fact.pk}/visibility", {"visibility": "private"}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["visibility"] == "private"
    seen = member_client.get(f"/api/ai/legacies/{family.legacy.pk}/facts").json()
    assert str(fact.pk) not in [f["id"] for f in seen["facts"]]


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({"visibility": "public"}, {"visibility": ['"public" is not a valid choice.']}),
        ({}, {"visibility": ["This field is required."]}),
    ],
)
def test_visibility_rejects_bad_input(family, facts, owner_client, body, errors):
    before = _snapshot()
    fact = facts["owner_private"]
    response = owner_client.patch(f"/api/ai/facts/{fact.pk}/visibility", body, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == errors
    assert _snapshot() == before


def test_author_edits_a_fact(family, facts, owner_client):
    fact = facts["owner_shared"]
    response = owner_client.patch(
        f"/api/ai/facts/{fact.pk}",
        {"content": "She taught piano for forty-one years.", "category": "milestone"},
        format="json",
    )
    assert response.status_code == 200
    assert response.json() == _fact_json(fact, is_mine=True)
    assert (fact.content, fact.category) == ("She taught piano for forty-one years.", "milestone")


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({"content": "no"}, {"content": ["Must be 3–500 characters."]}),
        ({"category": "gossip"}, {"category": ['"gossip" is not a valid choice.']}),
        ({"content": "She kept bees behind the barn!"}, None),
    ],
)
def test_edit_rejects_bad_input_and_duplicates(family, facts, owner_client, body, errors):
    before = _snapshot()
    fact = facts["owner_shared"]
    response = owner_client.patch(f"/api/ai/facts/{fact.pk}", body, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == (
        errors or {"content": ["That duplicates another of your facts about this legacy."]}
    )
    assert _snapshot() == before


def test_author_deletes_a_fact(family, facts, owner_client):
    fact = facts["owner_private"]
    response = owner_client.delete(f"/api/ai/facts/{fact.pk}")
    assert response.status_code == 204
    assert response.content == b""
    assert not LegacyFact.objects.filter(pk=fact.pk).exists()
    assert Conversation.objects.count() == 1


def test_a_fact_deleted_meanwhile_is_not_deleted_twice(family, facts):
    """Found by a hostile relative: eight deletes of one fact at once all answered 204. Each
    reads the fact, then waits for the locks; the second finds it gone: 404."""
    from facts import services
    from memory_site.core.errors import NotFound

    fact = facts["owner_private"]
    stale = LegacyFact.objects.get(pk=fact.pk)  # as the other request read it
    services.fact_delete(fact=fact, user=family.owner)
    with pytest.raises(NotFound):
        services.fact_delete(fact=stale, user=family.owner)


@pytest.mark.parametrize(
    ("method", "suffix"),
    [("get", ""), ("patch", ""), ("delete", ""), ("patch", "/visibility")],
)
def test_a_fact_id_that_is_not_a_uuid_is_a_json_404(family, owner_client, method, suffix):
    response = getattr(owner_client, method)(f"/api/ai/facts/not-a-uuid{suffix}")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found.", "code": "not_found"}


def test_an_unknown_fact_or_legacy_is_a_404(family, owner_client):
    response = owner_client.delete(f"/api/ai/facts/{uuid.uuid4()}")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found.", "code": "not_found"}
    response = owner_client.get(f"/api/ai/legacies/{uuid.uuid4()}/facts")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found.", "code": "not_found"}


# --- Authorization matrix: every fact route × every kind of caller -----------------------------

NOT_FOUND = {"detail": "Not found.", "code": "not_found"}
FORBIDDEN = {"detail": "Only the fact's author can change it.", "code": "permission_denied"}
UNAUTHENTICATED = {
    "detail": "Authentication credentials were not provided.", "code": "not_authenticated",
}

# (route, method, body, which fact) — the legacy routes use the family's legacy.
FACT_ROUTES = [
    ("visibility", "patch", {"visibility": "shared"}),
    ("detail", "patch", {"content": "Rewritten by someone else."}),
    ("detail", "delete", None),
]


def _fact_url(route: str, fact: LegacyFact) -> str:
    return f"/api/ai/facts/{fact.pk}" + ("/visibility" if route == "visibility" else "")


def _call(client, method: str, url: str, body: dict | None):
    if body is None:
        return getattr(client, method)(url)
    return getattr(client, method)(url, body, format="json")


@pytest.mark.parametrize(("route", "method", "body"), FACT_ROUTES)
@pytest.mark.parametrize("fact_key", ["owner_private", "owner_shared"])
@pytest.mark.parametrize(
    ("caller", "status", "expected"),
    [
        ("anonymous", 401, UNAUTHENTICATED),
        ("stranger", 404, NOT_FOUND),
        ("other_member", 404, NOT_FOUND),
        ("member", None, None),  # 403 for a shared fact, 404 for a private one
    ],
)
def test_fact_routes_deny_everyone_but_the_author(
    family, facts, route, method, body, fact_key, caller, status, expected
):
    user = None if caller == "anonymous" else getattr(family, caller)
    if caller == "member":
        shared = fact_key == "owner_shared"
        status, expected = (403, FORBIDDEN) if shared else (404, NOT_FOUND)
    before = _snapshot()
    response = _call(api_client_for(user), method, _fact_url(route, facts[fact_key]), body)
    assert response.status_code == status
    assert response.json() == expected
    assert _snapshot() == before


@pytest.mark.parametrize(("route", "method", "body"), FACT_ROUTES)
def test_fact_routes_let_the_author_through(family, facts, route, method, body):
    fact = facts["member_private"]
    response = _call(api_client_for(family.member), method, _fact_url(route, fact), body)
    assert response.status_code == (204 if method == "delete" else 200)


@pytest.mark.parametrize(
    ("method", "body"),
    [("get", None), ("post", {"category": "hobby", "content": "Added by an outsider."})],
)
@pytest.mark.parametrize(
    ("caller", "status", "expected"),
    [
        ("anonymous", 401, UNAUTHENTICATED),
        ("stranger", 404, NOT_FOUND),
        ("other_member", 404, NOT_FOUND),
    ],
)
def test_legacy_fact_routes_deny_non_members(
    family, facts, method, body, caller, status, expected
):
    user = None if caller == "anonymous" else getattr(family, caller)
    before = _snapshot()
    response = _call(
        api_client_for(user), method, f"/api/ai/legacies/{family.legacy.pk}/facts", body
    )
    assert response.status_code == status
    assert response.json() == expected
    assert _snapshot() == before


@pytest.mark.parametrize(("method", "status"), [("get", 200), ("post", 201)])
@pytest.mark.parametrize("caller", ["owner", "member"])
def test_legacy_fact_routes_let_every_member_through(family, facts, method, status, caller):
    body = {"category": "hobby", "content": f"Added by the {caller}."}
    response = _call(
        api_client_for(getattr(family, caller)), method,
        f"/api/ai/legacies/{family.legacy.pk}/facts", body if method == "post" else None,
    )
    assert response.status_code == status


# --- Query counts ------------------------------------------------------------------------------


def test_listing_legacies_takes_as_many_queries_for_six_as_for_one(
    family, django_assert_num_queries
):
    client = api_client_for(family.member)
    with CaptureQueriesContext(connection) as one:
        response = client.get("/api/legacies")
    assert [legacy["created_by"] for legacy in response.json()["legacies"]] == ["owner"]

    for n in range(5):
        legacy = LegacyFactory(name=f"Legacy {n}", created_by=UserFactory(username=f"creator{n}"))
        MembershipFactory(legacy=legacy, user=family.member)
    with django_assert_num_queries(len(one)):
        response = client.get("/api/legacies")
    assert [legacy["created_by"] for legacy in response.json()["legacies"]] == [
        "creator0", "creator1", "creator2", "creator3", "creator4", "owner",
    ]
