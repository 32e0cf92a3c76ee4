"""Platform keys: `manage.py platform_key` creates (printing the key once), lists and revokes
them; `Api-Key` + `X-User-Id` acts as that platform's user, created once on first use; bad keys
are 401 and bad user ids 400 in the error format; a platform alone may only provision; two
platforms never share a user, and the rate limit counts per platform user."""

import io

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from conversations.models import Conversation
from memory_site.platforms.models import Platform, PlatformKey, PlatformUser
from memory_site.platforms.services import platform_key_create
from tests.conftest import api_client_for
from tests.factories import ConversationFactory, LegacyFactory, UserFactory

pytestmark = pytest.mark.django_db
User = get_user_model()


@pytest.fixture(autouse=True)
def _fresh_counts():
    cache.clear()


def _client(key: str, user_id: str | None = None) -> APIClient:
    client = APIClient()
    headers = {"HTTP_AUTHORIZATION": f"Api-Key {key}"}
    if user_id is not None:
        headers["HTTP_X_USER_ID"] = user_id
    client.credentials(**headers)
    return client


def _create(name: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("platform_key", "create", name, stdout=out, stderr=err)
    return out.getvalue().strip()


def test_create_prints_the_key_once_and_stores_only_its_hash():
    out, err = io.StringIO(), io.StringIO()
    call_command("platform_key", "create", "chat-frontend", stdout=out, stderr=err)
    key = out.getvalue().strip()
    row = PlatformKey.objects.get()
    assert row.platform.name == "chat-frontend" and row.name == "chat-frontend"
    assert key.startswith(f"{row.prefix}.") and len(key) > 30
    assert key not in row.hashed_key and key != row.id
    assert "not shown again" in err.getvalue() and key not in err.getvalue()
    listed = io.StringIO()
    call_command("platform_key", "list", stdout=listed)
    assert listed.getvalue().split("\t")[:2] == [row.prefix, "chat-frontend"]
    assert listed.getvalue().rstrip().endswith("active")
    assert key not in listed.getvalue()


def test_a_second_key_of_a_platform_reaches_the_same_users_and_revoke_ends_them_all():
    first = _create("chat-frontend")
    user = _client(first, "u-1").get("/api/legacies").wsgi_request.user
    second = _create("chat-frontend")
    assert Platform.objects.count() == 1
    assert _client(second, "u-1").get("/api/legacies").wsgi_request.user == user
    out = io.StringIO()
    call_command("platform_key", "revoke", "chat-frontend", stdout=out)
    assert out.getvalue() == "Revoked 2 key(s) of platform 'chat-frontend'.\n"
    for key in (first, second):
        response = _client(key, "u-1").get("/api/legacies")
        assert response.status_code == 401
        assert response.json() == {
            "detail": "Invalid or revoked platform key.", "code": "authentication_failed"
        }
    listed = io.StringIO()
    call_command("platform_key", "list", stdout=listed)
    assert [line.rsplit("\t", 1)[1] for line in listed.getvalue().splitlines()] == [
        "revoked", "revoked"
    ]
    with pytest.raises(CommandError, match="No platform named 'nobody'"):
        call_command("platform_key", "revoke", "nobody", stdout=io.StringIO())


def test_the_first_call_with_a_user_id_creates_the_user_once():
    key = _create("chat-frontend")
    client = _client(key, "user-42@example.org")
    response = client.get("/api/legacies")
    assert response.status_code == 200
    assert response.json() == {"legacies": [], "total": 0, "limit": 50, "offset": 0}
    created = client.post("/api/legacies", {"name": "Rose Whitfield"}, format="json")
    assert created.status_code == 201
    platform_user = PlatformUser.objects.get()
    assert platform_user.external_id == "user-42@example.org"
    assert platform_user.user.username == f"p{platform_user.platform_id}:user-42@example.org"
    assert not platform_user.user.has_usable_password()
    assert created.json()["role"] == "owner"
    assert client.get("/api/legacies").json()["total"] == 1
    assert User.objects.count() == 1


def test_a_long_or_unicode_external_id_is_one_user_of_its_own():
    key = _create("chat-frontend")
    long_id = "x" * 255
    assert _client(key, long_id).get("/api/legacies").status_code == 200
    assert _client(key, long_id).get("/api/legacies").status_code == 200
    unicode_id = "José Müller"
    # WSGI hands headers over decoded as latin-1: what a client sending UTF-8 arrives as.
    as_sent = unicode_id.encode().decode("latin-1")
    assert _client(key, as_sent).get("/api/legacies").status_code == 200
    assert sorted(PlatformUser.objects.values_list("external_id", flat=True)) == sorted(
        [long_id, unicode_id]
    )
    assert User.objects.count() == 2
    assert all(len(u.username) <= 150 for u in User.objects.all())


@pytest.mark.parametrize(
    "authorization",
    ["Api-Key nothing.valid", "Api-Key ", "Api-Key a b", "Api-Key abc", "Api-Key .", "Api-Key\t",
     "api-key nothing.valid"],
)
def test_an_unknown_or_malformed_key_is_a_401_and_creates_nobody(authorization):
    _create("chat-frontend")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=authorization, HTTP_X_USER_ID="u-1")
    response = client.get("/api/legacies")
    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"
    assert response["WWW-Authenticate"]
    assert not User.objects.exists()


def test_a_key_with_a_wrong_secret_is_a_401():
    key = _create("chat-frontend")
    prefix = key.partition(".")[0]
    response = _client(f"{prefix}.{'x' * 32}", "u-1").get("/api/legacies")
    assert response.status_code == 401
    assert not User.objects.exists()


@pytest.mark.parametrize(
    ("user_id", "message"),
    [
        ("", "X-User-Id must not be empty."),
        ("x" * 256, "X-User-Id must be at most 255 characters."),
        ("a\nb", "X-User-Id must contain printable characters only (no control characters)."),
        ("a\x00b", "X-User-Id must contain printable characters only (no control characters)."),
        ("tab\there", "X-User-Id must contain printable characters only (no control characters)."),
        ("\xff\xfe", "X-User-Id must be UTF-8."),
    ],
)
def test_a_bad_user_id_is_a_400_in_the_error_format(user_id, message):
    key = _create("chat-frontend")
    response = _client(key, user_id).post("/api/legacies", {"name": "Rose"}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "detail": f"X-User-Id: {message}", "code": "invalid", "errors": {"X-User-Id": [message]}
    }
    assert not User.objects.exists()


def test_without_a_user_id_only_provisioning_works():
    key = _create("chat-frontend")
    platform = _client(key)
    response = platform.get("/api/legacies")
    assert response.status_code == 403
    assert response.json() == {
        "detail": "A platform key acts for one of its users here: send the user's external id "
        "in X-User-Id.",
        "code": "user_id_required",
    }
    assert platform.post("/api/legacies", {"name": "Rose"}, format="json").status_code == 403
    created = platform.post("/api/platform/users", {"external_id": "u-1"}, format="json")
    assert created.status_code == 201
    body = created.json()
    assert set(body) == {"external_id", "username", "created_at"}
    assert body["external_id"] == "u-1"
    assert body["username"] == f"p{Platform.objects.get().pk}:u-1"
    again = platform.post("/api/platform/users", {"external_id": "u-1"}, format="json")
    assert again.status_code == 200 and again.json() == body
    # The provisioned user is the one X-User-Id acts as.
    user = _client(key, "u-1").get("/api/legacies").wsgi_request.user
    assert user.username == body["username"]
    assert User.objects.count() == 1


def test_provisioning_refuses_bad_ids_and_other_credentials():
    key = _create("chat-frontend")
    response = _client(key).post("/api/platform/users", {"external_id": "a\nb"}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "external_id": ["external_id must contain printable characters only (no control "
                        "characters)."]
    }
    response = _client(key).post("/api/platform/users", {"external_id": "x" * 256}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    # An id X-User-Id could never carry (HTTP trims a header's value); " u" was acted for as "u".
    for padded in (" ", "u ", " u", "  u  "):
        response = _client(key).post("/api/platform/users", {"external_id": padded},
                                     format="json")
        assert response.status_code == 400, padded
        assert response.json()["errors"] == {
            "external_id": ["external_id must not begin or end with whitespace."]}
    response = _client(key).post("/api/platform/users", {}, format="json")
    assert response.status_code == 400
    person = UserFactory(username="margaret")
    response = api_client_for(person).post(
        "/api/platform/users", {"external_id": "u-1"}, format="json"
    )
    assert response.status_code == 403
    assert response.json() == {"detail": "Only a platform key may call this.",
                               "code": "permission_denied"}
    assert APIClient().post("/api/platform/users", {"external_id": "u-1"},
                            format="json").status_code == 401
    assert not PlatformUser.objects.exists()


def test_two_platforms_never_share_a_user():
    first, second = _create("first"), _create("second")
    one = _client(first, "same-id").get("/api/legacies").wsgi_request.user
    two = _client(second, "same-id").get("/api/legacies").wsgi_request.user
    assert one.pk != two.pk
    assert PlatformUser.objects.filter(external_id="same-id").count() == 2
    # Provisioning is per platform too.
    provisioned = _client(first).post("/api/platform/users", {"external_id": "same-id"},
                                      format="json")
    assert provisioned.status_code == 200
    assert provisioned.json()["username"] == one.username


def test_a_platform_users_conversation_is_404_to_another_platforms_user_with_the_same_id():
    first, second = _create("first"), _create("second")
    owner = _client(first, "same-id")
    legacy = owner.post("/api/legacies", {"name": "Rose"}, format="json").json()
    conversation = owner.post(
        "/api/ai/conversations", {"legacy_id": legacy["id"]}, format="json"
    ).json()
    path = f"/api/ai/conversations/{conversation['id']}"
    assert owner.get(path).status_code == 200
    other = _client(second, "same-id")
    assert other.get(path).status_code == 404
    assert other.get(f"{path}/messages").status_code == 404
    response = other.post(f"{path}/messages", {"role": "user", "content": "x"}, format="json")
    assert response.status_code == 404
    assert other.get("/api/ai/conversations").json()["total"] == 0
    assert Conversation.objects.get().messages.count() == 0


def test_a_platform_user_reaches_what_a_signed_in_user_would_and_no_more():
    key = _create("chat-frontend")
    person = UserFactory(username="margaret")
    legacy = LegacyFactory(name="Walter", created_by=person)
    conversation = ConversationFactory(user=person, legacy=legacy)
    client = _client(key, "margaret")
    assert client.get(f"/api/ai/conversations/{conversation.pk}").status_code == 404
    response = client.get("/api/legacies")
    assert response.json()["total"] == 0
    assert response.wsgi_request.user != person
    assert response.wsgi_request.user.username == f"p{Platform.objects.get().pk}:margaret"


def test_the_rate_limit_counts_per_platform_user(settings):
    settings.THROTTLE_RATE_USER = "2/minute"
    key = _create("chat-frontend")
    one, two = _client(key, "u-1"), _client(key, "u-2")
    assert one.get("/api/legacies").status_code == 200
    assert one.get("/api/legacies").status_code == 200
    refused = one.get("/api/legacies")
    assert refused.status_code == 429
    assert refused.json()["code"] == "throttled"
    # Another user of the same platform (and key) has a count of their own.
    assert two.get("/api/legacies").status_code == 200
    assert two.get("/api/legacies").status_code == 200
    assert two.get("/api/legacies").status_code == 429


def test_the_admin_shows_platforms_keys_and_users(admin_client):
    platform_key, _ = platform_key_create(name="chat-frontend")
    for page in ("platform", "platformkey", "platformuser"):
        assert admin_client.get(f"/admin/platforms/{page}/").status_code == 200
    assert admin_client.get(f"/admin/platforms/platformkey/{platform_key.pk}/change/"
                            ).status_code == 200
    response = admin_client.post(
        "/admin/platforms/platformkey/add/",
        {"name": "second", "platform": platform_key.platform_id, "revoked": ""},
    )
    assert response.status_code == 302
    assert PlatformKey.objects.filter(name="second", platform=platform_key.platform).exists()


def test_the_schema_describes_the_key_and_x_user_id(client):
    schema = yaml.safe_load(client.get("/api/schema").content)
    schemes = schema["components"]["securitySchemes"]
    assert schemes["platformKey"] | {"description": ""} == {
        "type": "apiKey", "in": "header", "name": "Authorization", "description": ""
    }
    assert schemes["platformUserId"]["name"] == "X-User-Id"
    assert schemes["platformUserId"]["in"] == "header"
    # A user's call needs both; provisioning the key alone.
    assert {"platformKey": [], "platformUserId": []} in (
        schema["paths"]["/api/legacies"]["get"]["security"]
    )
    assert schema["paths"]["/api/platform/users"]["post"]["security"] == [{"platformKey": []}]


def _memberships():
    from facts.models import LegacyMembership

    return sorted(LegacyMembership.objects.values_list("legacy_id", "user_id", "role"))


def test_a_platform_adds_only_its_own_users_to_a_family_directly():
    """Families by consent: the platform holds its users' consent, so it adds them directly;
    anyone else (a person of the dashboard, another platform's user) is invited instead. A
    platform names people by its own ids: another platform's username, or a person's, is an id
    of its own, a user of its own, and never reaches them."""
    first, second = _create("first"), _create("second")
    owner = _client(first, "owner-1")
    legacy = owner.post("/api/legacies", {"name": "Rose Whitfield"}, format="json").json()
    sister = _client(first).post("/api/platform/users", {"external_id": "sister-7"},
                                 format="json").json()["username"]
    stranger_of_second = _client(second).post(
        "/api/platform/users", {"external_id": "sister-7"}, format="json"
    ).json()["username"]
    person = UserFactory(username="dashboard-person")
    # Another platform's username looks like a username of this service: refused (400), not
    # read as an id of the caller's own.
    refused = owner.post(f"/api/legacies/{legacy['id']}/members",
                         {"username": stranger_of_second, "role": "member"}, format="json")
    assert refused.status_code == 400 and set(refused.json()["errors"]) == {"username"}
    for username in (person.username,):
        added = owner.post(f"/api/legacies/{legacy['id']}/members",
                           {"username": username, "role": "member"}, format="json")
        assert added.status_code == 201, username
        assert added.json()["external_id"] == username
        assert added.json()["username"] == f"p{Platform.objects.get(name='first').pk}:{username}"
    from facts.models import LegacyMembership

    second_user = User.objects.get(username=stranger_of_second)
    assert not LegacyMembership.objects.filter(user__in=[second_user, person]).exists()
    before = _memberships()
    # A person's API token never adds directly, whoever it names.
    person_legacy = api_client_for(person).post(
        "/api/legacies", {"name": "Walter Brandt"}, format="json").json()
    refused = api_client_for(person).post(f"/api/legacies/{person_legacy['id']}/members",
                                          {"username": "sister-7", "role": "member"},
                                          format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "invitation_required"
    assert len(_memberships()) == len(before) + 1  # the person's own, of their new legacy
    added = owner.post(f"/api/legacies/{legacy['id']}/members",
                       {"username": "sister-7", "role": "member"}, format="json")
    assert added.status_code == 201
    assert added.json()["username"] == sister
    # The sister now sees the family through the same key.
    members = _client(first, "sister-7").get(f"/api/legacies/{legacy['id']}/members").json()
    assert [m["external_id"] for m in members["members"]] == [
        "owner-1", person.username, "sister-7"]


def test_a_platform_names_people_by_external_id_only_and_me_is_the_caller():
    """Found by a hostile probe: `p1:victim` named the user of external id `victim` in family
    calls but the user of external id `p1:victim` in X-User-Id, and which one depended on what
    existed; the external id `me` (stored `p1:me`) could be added, and removing `me` then made
    the owner leave and hand the legacy to them. Now a name is an external id, always, as in
    X-User-Id, and `me` in any case is the caller."""
    key = _create("first")
    prefix = f"p{Platform.objects.get(name='first').pk}:"
    owner = _client(key, "owner-1")
    legacy = owner.post("/api/legacies", {"name": "Rose Whitfield"}, format="json").json()
    members_url = f"/api/legacies/{legacy['id']}/members"
    assert legacy["created_by_external_id"] == "owner-1"
    assert [item["created_by_external_id"] for item in owner.get("/api/legacies").json()[
        "legacies"]] == ["owner-1"]
    _client(key, "victim").get("/api/legacies")
    _client(key, f"{prefix}victim").get("/api/legacies")
    # A username as the lists show it names nobody: a 400, as the schema's pattern says, and
    # nobody made or reached (an id of that form cannot be named in a family call at all).
    users = User.objects.count()
    for name in (f"{prefix}victim", f"{prefix}ghost"):
        refused = owner.post(members_url, {"username": name}, format="json")
        assert refused.status_code == 400 and "external id" in refused.json()["detail"], name
    assert User.objects.count() == users
    assert owner.delete(f"{members_url}/{prefix}victim").status_code == 404
    assert [m["external_id"] for m in owner.get(members_url).json()["members"]] == ["owner-1"]
    for me in ("me", "Me", "ME"):
        refused = owner.post(members_url, {"username": me}, format="json")
        assert refused.status_code == 409, me
        assert refused.json()["detail"] == "That user is already a member of this legacy."
    assert not PlatformUser.objects.filter(external_id__iexact="me").exists()
    # An id with a '/' is named like any other.
    for external_id in ("team/ann", "x" * 150):
        assert owner.post(members_url, {"username": external_id},
                          format="json").status_code == 201, external_id
        assert owner.delete(f"{members_url}/{external_id}").status_code == 200, external_id


def test_look_alike_external_ids_are_different_users():
    """Found by a hostile probe: create_user's Unicode normalisation stored `ｖictim` (full
    width) as `p1:victim`, so the real `victim` could never be made (a 500 from then on), and
    an id that grew past 150 characters when normalised was a 500."""
    key = _create("first")
    for external_id in ("ｎewbie", "newbie", "\ufdfa" * 40):
        # WSGI hands headers over decoded as latin-1: what a client sending UTF-8 arrives as.
        response = _client(key, external_id.encode().decode("latin-1")).get("/api/legacies")
        assert response.status_code == 200, external_id
    assert PlatformUser.objects.filter(external_id__in=["ｎewbie", "newbie"]).count() == 2
    assert len({u.user_id for u in PlatformUser.objects.all()}) == 3
    provisioned = _client(key).post("/api/platform/users", {"external_id": "newbie"},
                                    format="json")
    assert provisioned.status_code == 200


def test_a_platform_names_family_members_by_its_own_ids():
    """Invite, accept, list, add and remove, all by external id: the people named are the
    platform's users (provisioned on first mention, as X-User-Id would), and every list
    carries the external id beside the username."""
    key = _create("first")
    owner = _client(key, "owner-1")
    legacy = owner.post("/api/legacies", {"name": "Rose Whitfield"}, format="json").json()
    members_url = f"/api/legacies/{legacy['id']}/members"

    sent = owner.post(f"/api/legacies/{legacy['id']}/invitations",
                      {"username": "cousin-3"}, format="json")
    assert sent.status_code == 202
    pending = owner.get(f"/api/legacies/{legacy['id']}/invitations").json()["invitations"]
    assert [(i["username"], i["external_id"]) for i in pending] == [
        (sent.json()["username"], "cousin-3")]
    cousin = _client(key, "cousin-3")
    mine = cousin.get("/api/invitations").json()["invitations"]
    assert [(i["legacy_id"], i["invited_by_external_id"]) for i in mine] == [
        (legacy["id"], "owner-1")]
    assert cousin.post(f"/api/invitations/{mine[0]['id']}/accept").status_code == 201

    added = owner.post(members_url, {"username": "aunt-9"}, format="json")
    assert added.status_code == 201 and added.json()["external_id"] == "aunt-9"
    family = owner.get(members_url).json()["members"]
    assert [m["external_id"] for m in family] == ["owner-1", "cousin-3", "aunt-9"]

    removed = owner.delete(f"{members_url}/cousin-3")
    assert removed.status_code == 200
    # Named as the family list names them, however the path named them (found by an
    # integrator: the answer echoed the path, "ME" or an external id without its field).
    assert (removed.json()["username"], removed.json()["external_id"]) == (
        sent.json()["username"], "cousin-3")
    assert [m["external_id"] for m in owner.get(members_url).json()["members"]] == [
        "owner-1", "aunt-9"]
    # Removing an id nobody was given provisions nobody.
    users = User.objects.count()
    assert owner.delete(f"{members_url}/nobody-5").status_code == 404
    assert User.objects.count() == users
    # An id no X-User-Id could carry names nobody: not added, nobody made.
    bad = owner.post(members_url, {"username": "tab\there"}, format="json")
    assert bad.status_code == 403 and bad.json()["code"] == "invitation_required"
    assert User.objects.count() == users
    # "me" in any case is the caller.
    left = owner.delete(f"{members_url}/ME").json()
    assert (left["username"], left["external_id"]) == (family[0]["username"], "owner-1")
    assert (left["new_owner"], left["new_owner_external_id"]) == (family[2]["username"], "aunt-9")


def test_a_platform_names_a_member_by_an_external_id_of_any_allowed_length():
    """An external id may be 255 characters (X-User-Id's limit): a family call names such a
    user too. Before, the names of family calls stopped at 150 characters (a username's
    limit), and a 200-character id could be neither invited, added nor removed (400)."""
    key = _create("first")
    owner = _client(key, "owner-1")
    legacy = owner.post("/api/legacies", {"name": "Rose Whitfield"}, format="json").json()
    members_url = f"/api/legacies/{legacy['id']}/members"
    long_id, longest = "y" * 200, "z" * 255
    assert _client(key, long_id).get("/api/legacies").status_code == 200

    added = owner.post(members_url, {"username": long_id}, format="json")
    assert added.status_code == 201, added.json()
    assert added.json()["external_id"] == long_id
    invited = owner.post(f"/api/legacies/{legacy['id']}/invitations",
                         {"username": longest}, format="json")
    assert invited.status_code == 202, invited.json()
    mine = _client(key, longest).get("/api/invitations").json()["invitations"]
    assert [i["legacy_id"] for i in mine] == [legacy["id"]]
    assert owner.delete(f"{members_url}/{long_id}").status_code == 200
    assert [m["external_id"] for m in owner.get(members_url).json()["members"]] == ["owner-1"]
    too_long = owner.post(members_url, {"username": "x" * 256}, format="json")
    assert too_long.status_code == 400
    # A person may name as long a name too: nobody's, so an invitation nobody answers.
    person = UserFactory(username="dashboard-owner")
    theirs = api_client_for(person).post("/api/legacies", {"name": "Walter"},
                                         format="json").json()
    sent = api_client_for(person).post(f"/api/legacies/{theirs['id']}/invitations",
                                       {"username": long_id}, format="json")
    assert sent.status_code == 202, sent.json()


def test_an_invitation_crosses_no_platform_and_no_dashboard():
    """Another platform's user, or a person of the dashboard, who invites a platform's user by
    its stored username gets the same 202 as for anyone, and the invitation reaches nobody;
    nor does a platform's invitation reach a person of the dashboard. Before, the invitee saw
    it, with a legacy name and an inviter the other side chose."""
    first, second = _create("first"), _create("second")
    ben = _client(first, "ben")
    ben_username = ben.get("/api/legacies").wsgi_request.user.get_username()
    person = UserFactory(username="dashboard-person")

    mallory = _client(second, "mallory")
    theirs = mallory.post("/api/legacies", {"name": "Free prize"}, format="json").json()
    # A platform names people by external id: another platform's username is refused
    # outright (whether or not it exists), and writes nothing.
    sent = mallory.post(f"/api/legacies/{theirs['id']}/invitations",
                        {"username": ben_username}, format="json")
    assert sent.status_code == 400
    persons = api_client_for(person).post("/api/legacies", {"name": "Walter"},
                                          format="json").json()
    sent = api_client_for(person).post(f"/api/legacies/{persons['id']}/invitations",
                                       {"username": ben_username}, format="json")
    assert sent.status_code == 400  # a platform's stored username is no person's name
    assert ben.get("/api/invitations").json() == {"invitations": [], "total": 0}

    bens = ben.post("/api/legacies", {"name": "Rose"}, format="json").json()
    sent = ben.post(f"/api/legacies/{bens['id']}/invitations",
                    {"username": f"p{Platform.objects.get(name='second').pk}:mallory"},
                    format="json")
    assert sent.status_code == 400
    assert mallory.get("/api/invitations").json()["total"] == 0
    assert api_client_for(person).get("/api/invitations").json()["total"] == 0


def test_an_invitation_sent_across_realms_before_the_rule_is_neither_listed_nor_accepted():
    """Found by a review: the realm rule was only checked when inviting, so an invitation written
    across realms before it (another platform's user inviting this one's as owner) was still
    listed and accepted."""
    from facts.models import LegacyInvitation, LegacyMembership
    from tests.factories import LegacyFactory

    first, second = _create("first"), _create("second")
    ben = _client(first, "ben")
    ben.get("/api/legacies")
    mallory = _client(second, "mallory")
    mallory.get("/api/legacies")
    ben_user = PlatformUser.objects.get(external_id="ben").user
    mallory_user = PlatformUser.objects.get(external_id="mallory").user
    legacy = LegacyFactory(name="Free prize", created_by=mallory_user)
    stale = LegacyInvitation.objects.create(legacy=legacy, username=ben_user.username,
                                            invited_user=ben_user, invited_by=mallory_user,
                                            role="owner")
    assert ben.get("/api/invitations").json()["total"] == 0
    assert ben.post(f"/api/invitations/{stale.pk}/accept").status_code == 404
    assert not LegacyMembership.objects.filter(user=ben_user, legacy=legacy).exists()
    # Nor in ben's export, nor does the owner's list tell mallory ben's id (a hostile probe).
    assert ben.get("/api/me/data").json()["invitations"] == []
    [listed] = mallory.get(f"/api/legacies/{legacy.pk}/invitations").json()["invitations"]
    assert listed["external_id"] is None


def test_ids_a_path_or_a_name_could_not_carry_are_refused():
    """Found by a hostile probe: `me/` could be added, and DELETE …/members/me%2F, its trailing
    slash stripped as every API path's is, made the owner leave and hand them the legacy; a
    name with spaces at its ends was trimmed into someone else's."""
    key = _create("first")
    owner = _client(key, "owner-1")
    legacy = owner.post("/api/legacies", {"name": "Rose Whitfield"}, format="json").json()
    for name in ("me/", "team/", "/", " ann ", "ann "):
        refused = owner.post(f"/api/legacies/{legacy['id']}/members", {"username": name},
                             format="json")
        assert refused.status_code == 400, name
        assert set(refused.json()["errors"]) == {"username"}, name
    assert _client(key).post("/api/platform/users", {"external_id": "team/"},
                             format="json").status_code == 400
    assert not PlatformUser.objects.exclude(external_id="owner-1").exists()


def test_a_denied_family_call_provisions_nobody():
    """Found by a review: a member (not an owner) inviting or adding an external id nobody had
    sent provisioned that user before the owner check refused the call."""
    key = _create("first")
    owner = _client(key, "owner-1")
    legacy = owner.post("/api/legacies", {"name": "Rose Whitfield"}, format="json").json()
    assert owner.post(f"/api/legacies/{legacy['id']}/members", {"username": "member-2"},
                      format="json").status_code == 201
    member = _client(key, "member-2")
    users = User.objects.count()
    for path in ("invitations", "members"):
        refused = member.post(f"/api/legacies/{legacy['id']}/{path}", {"username": "new-9"},
                              format="json")
        assert refused.status_code == 403, path
    assert User.objects.count() == users
    assert not PlatformUser.objects.filter(external_id="new-9").exists()


def test_the_owners_invitation_list_reads_every_invitation_in_the_same_queries(
        django_assert_max_num_queries):
    """Each row's external id needs the inviter's and the invitee's platform records: read with
    the rows, not one query per invitation (found reading the change)."""
    key = _create("first")
    owner = _client(key, "owner-1")
    legacy = owner.post("/api/legacies", {"name": "Rose Whitfield"}, format="json").json()
    url = f"/api/legacies/{legacy['id']}/invitations"
    owner.post(url, {"username": "cousin-1"}, format="json")
    for n in range(2, 6):
        owner.post(url, {"username": f"cousin-{n}"}, format="json")
    # The key, its platform, the caller, the legacy, the owner check, the invitations with both
    # people's platform records: 6, whatever the number of invitations (11 before, for 5).
    with django_assert_max_num_queries(6):
        assert owner.get(url).json()["total"] == 5
