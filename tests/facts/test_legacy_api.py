"""The legacies API: create, list, paginate, add members (integrations only), with bad input and
without a token."""

import pytest
from rest_framework.test import APIClient

from facts import services
from facts.models import LegacyMembership
from tests.conftest import api_client_for
from tests.factories import UserFactory
from tests.support.rows import family_and_conversation_rows

pytestmark = pytest.mark.django_db


_state = family_and_conversation_rows


def test_create_a_legacy_makes_me_its_owner(owner_client, family):
    response = owner_client.post("/api/legacies", {"name": "  Ada Lovelace "}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["name"] == "Ada Lovelace"
    assert body["role"] == "owner"
    assert body["created_by"] == "owner"
    assert body["created_by_external_id"] is None
    assert LegacyMembership.objects.get(legacy_id=body["id"]).user == family.owner


def test_list_my_legacies_only(owner_client, member_client, family):
    body = owner_client.get("/api/legacies").json()
    assert body["total"] == 1
    assert [(item["name"], item["role"]) for item in body["legacies"]] == [
        ("Rose Whitfield", "owner")
    ]
    body = member_client.get("/api/legacies/").json()
    assert [(item["name"], item["role"]) for item in body["legacies"]] == [
        ("Rose Whitfield", "member")
    ]
    assert api_client_for(family.stranger).get("/api/legacies").json() == {
        "legacies": [], "total": 0, "limit": 50, "offset": 0,
    }


def test_list_is_paginated_with_a_maximum_page_size(owner_client, family, settings):
    settings.API_MAX_PAGE_SIZE = 2
    for n in range(3):
        owner_client.post("/api/legacies", {"name": f"L{n}"}, format="json")
    body = owner_client.get("/api/legacies?limit=100").json()
    assert body["total"] == 4
    assert len(body["legacies"]) == 2
    assert body["limit"] == 2
    # A limit refused says the page's own bound too, not only the integer's.
    refused = owner_client.get("/api/legacies?limit=0")
    assert refused.status_code == 400
    assert refused.json()["errors"] == {"limit": [
        "Must be an integer from 1 to 2147483647. A page holds at most 2 items: a larger "
        "limit gives that many."]}


@pytest.mark.parametrize(
    ("payload", "field"),
    [({}, "name"), ({"name": ""}, "name"), ({"name": "x" * 201}, "name")],
)
def test_create_legacy_rejects_bad_input(owner_client, payload, field):
    before = _state()
    response = owner_client.post("/api/legacies", payload, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert field in body["errors"]
    assert body["detail"].startswith(f"{field}:")
    assert _state() == before


def test_a_non_json_body_is_a_clear_400(owner_client):
    before = _state()
    response = owner_client.generic(
        "POST", "/api/legacies", "{not json", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"
    assert "JSON parse error" in response.json()["detail"]
    assert _state() == before


# A stand-in for the platform keys: a client authenticated with force_authenticate counts as
# an integration that holds its users' consent (settings.FAMILY_DIRECT_ADD_AUTHENTICATORS).
INTEGRATION = "rest_framework.request.ForcedAuthentication"


@pytest.fixture
def integration_owner(settings, family) -> APIClient:
    settings.FAMILY_DIRECT_ADD_AUTHENTICATORS = [INTEGRATION]
    client = APIClient()
    client.force_authenticate(family.owner)
    return client


def test_an_integration_adds_a_member_directly(integration_owner, family):
    newcomer = UserFactory(username="cousin")
    response = integration_owner.post(
        f"/api/legacies/{family.legacy.pk}/members",
        {"username": "cousin", "role": "member"},
        format="json",
    )
    assert response.status_code == 201
    body = response.json()
    assert body["username"] == "cousin"
    assert body["role"] == "member"
    assert body["legacy_id"] == str(family.legacy.pk)
    assert LegacyMembership.objects.filter(legacy=family.legacy, user=newcomer).exists()


@pytest.mark.parametrize("client_of", ["token", "session"])
def test_a_person_cannot_add_a_member_without_their_consent(family, client_of):
    """Issue 13: an owner's session or token invites instead; nothing is written."""
    UserFactory(username="cousin")
    if client_of == "token":
        caller = api_client_for(family.owner)
    else:
        caller = APIClient()
        caller.force_login(family.owner)
    before = _state()
    response = caller.post(
        f"/api/legacies/{family.legacy.pk}/members",
        {"username": "cousin", "role": "member"},
        format="json",
    )
    assert response.status_code == 403
    assert response.json() == {
        "detail": services.InvitationRequired.default_message, "code": "invitation_required",
    }
    assert _state() == before


@pytest.mark.parametrize(
    ("payload", "status", "code"),
    [
        ({"username": "nobody-here", "role": "member"}, 400, "invalid"),
        ({"username": "cousin", "role": "admin"}, 400, "invalid"),
        ({"role": "member"}, 400, "invalid"),
        ({"username": "member", "role": "member"}, 409, "conflict"),
    ],
)
def test_add_member_bad_input(integration_owner, family, payload, status, code):
    UserFactory(username="cousin")
    before = _state()
    response = integration_owner.post(
        f"/api/legacies/{family.legacy.pk}/members", payload, format="json"
    )
    assert response.status_code == status
    assert response.json()["code"] == code
    assert _state() == before


def test_a_member_cannot_add_members_and_strangers_cannot_see_the_legacy(settings, family):
    settings.FAMILY_DIRECT_ADD_AUTHENTICATORS = [INTEGRATION]
    UserFactory(username="cousin")
    before = _state()
    url = f"/api/legacies/{family.legacy.pk}/members"
    payload = {"username": "cousin", "role": "member"}
    as_member = APIClient()
    as_member.force_authenticate(family.member)
    response = as_member.post(url, payload, format="json")
    assert response.status_code == 403
    assert response.json() == {
        "detail": "Only the legacy's owner can add members.", "code": "permission_denied",
    }
    for user in (family.stranger, family.other_member):
        as_user = APIClient()
        as_user.force_authenticate(user)
        response = as_user.post(url, payload, format="json")
        assert response.status_code == 404
        assert response.json() == {"detail": "Not found.", "code": "not_found"}
    assert _state() == before


def test_anonymous_requests_are_401_with_a_token_challenge(anon_client):
    response = anon_client.get("/api/legacies")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json() == {
        "detail": "Authentication credentials were not provided.", "code": "not_authenticated",
    }
