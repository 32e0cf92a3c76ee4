"""Creating a legacy on the dashboard (docs/facts.md "Dashboard"): the form on My legacies, the
empty state's two ways in, the API's rules as inline errors, and that a refused or forged
request writes nothing."""

import re

import pytest
from django.test import Client

from facts.models import Legacy, LegacyMembership
from tests.factories import UserFactory
from tests.support.csrf import csrf_token, signed_in

pytestmark = pytest.mark.django_db

CREATE = "/legacies/new"


def _state() -> tuple:
    return (
        sorted(Legacy.objects.values_list("pk", "name", "created_by_id")),
        sorted(LegacyMembership.objects.values_list("legacy_id", "user_id", "role")),
    )


def _text(response) -> str:
    """The page's words, without markup."""
    return " ".join(re.sub(r"<[^>]+>", "", response.content.decode()).split())


@pytest.fixture
def newcomer():
    return UserFactory(username="newcomer")


def test_the_empty_state_tells_both_ways_in_and_the_form_is_there(newcomer):
    response = signed_in(newcomer).get("/")
    assert response.status_code == 200
    html = response.content.decode()
    text = _text(response)
    assert "You don't belong to any legacy yet." in text
    assert "Create one below for the person you remember" in text
    assert "ask the owner of an existing legacy to invite you by your username, newcomer" in text
    assert '<a href="/invitations">Invitations</a>' in html
    assert "add you by your username" not in text
    assert f'<form method="post" action="{CREATE}" class="create-legacy-form">' in html
    assert 'name="csrfmiddlewaretoken"' in html
    # The browser says the first two rules before sending; the service says all of them.
    field = re.search(r'<input type="text" name="name"[^>]*>', html)[0]
    assert " required" in field and 'maxlength="200"' in field


def test_the_form_is_there_beside_the_legacies_one_has(family):
    html = signed_in(family.owner).get("/").content.decode()
    assert "Rose Whitfield" in html
    assert "You don't belong to any legacy yet." not in html
    assert '<h2 id="create-legacy-heading">Create a legacy</h2>' in html


def test_the_list_says_ones_role_in_each_legacy(family):
    assert "You are an owner · 2 members" in _text(signed_in(family.owner).get("/"))
    assert "You are a member · 2 members" in _text(signed_in(family.member).get("/"))


def test_creating_a_legacy_makes_one_its_owner_and_lands_on_its_page(newcomer):
    client = signed_in(newcomer)
    response = client.post(
        CREATE, {"name": "  Grandpa Joe  ", "csrfmiddlewaretoken": csrf_token(client, "/")}
    )
    legacy = Legacy.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/legacies/{legacy.pk}"
    assert (legacy.name, legacy.created_by_id) == ("Grandpa Joe", newcomer.pk)
    assert list(LegacyMembership.objects.values_list("legacy_id", "user_id", "role")) == [
        (legacy.pk, newcomer.pk, "owner")
    ]

    page = client.get(response["Location"])
    assert page.status_code == 200
    assert (
        '<ul class="flash"><li class="success">You have created the legacy of Grandpa Joe and '
        "are its owner. Invite the family below by their usernames.</li></ul>"
    ) in page.content.decode()
    assert "Send invitation" in page.content.decode()
    listed = _text(client.get("/"))
    assert "Grandpa Joe" in listed and "You are an owner · 1 member" in listed


def test_a_member_of_other_legacies_creates_another_and_the_others_are_untouched(family):
    client = signed_in(family.member)
    before = _state()
    response = client.post(
        CREATE, {"name": "Walter Brandt", "csrfmiddlewaretoken": csrf_token(client, "/")}
    )
    assert response.status_code == 302
    created = Legacy.objects.exclude(pk__in=[row[0] for row in before[0]]).get()
    # The same name as someone else's legacy is no clash: each family has its own.
    assert created.name == family.other_legacy.name and created.pk != family.other_legacy.pk
    assert created.created_by_id == family.member.pk
    assert _state()[1] == sorted([*before[1], (created.pk, family.member.pk, "owner")])
    listed = _text(client.get("/"))
    assert "Rose Whitfield" in listed and "Walter Brandt" in listed


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("", "A legacy needs a name."),
        ("   ", "A legacy needs a name."),
        ("\u200b\u2060\u2800", "A legacy needs a name."),  # only what no one sees
        ("R" * 201, "At most 200 characters."),
        ("Rose\x00Whitfield", "Null characters are not allowed."),
    ],
)
def test_a_refused_name_is_an_inline_error_and_writes_nothing(family, name, error):
    client = signed_in(family.stranger)
    token = csrf_token(client, "/")
    before = _state()
    response = client.post(CREATE, {"name": name, "csrfmiddlewaretoken": token})
    assert response.status_code == 400
    html = response.content.decode()
    assert f'<p class="error" role="alert">{error}</p>' in html
    assert html.count('role="alert"') == 1
    assert "<h1>My legacies</h1>" in html
    assert _state() == before


def test_a_name_of_exactly_the_limit_is_taken(newcomer):
    client = signed_in(newcomer)
    response = client.post(CREATE, {"name": "R" * 200, "csrfmiddlewaretoken": csrf_token(client, "/")})
    assert response.status_code == 302
    assert Legacy.objects.get().name == "R" * 200


def test_a_too_long_name_is_kept_in_the_field_to_shorten(newcomer):
    client = signed_in(newcomer)
    long_name = "Rosemary " * 23
    response = client.post(CREATE, {"name": long_name, "csrfmiddlewaretoken": csrf_token(client, "/")})
    assert response.status_code == 400
    assert f'value="{long_name}"' in response.content.decode()


@pytest.mark.parametrize("headers", [{}, {"HTTP_HX_REQUEST": "true"}])
def test_a_post_without_the_csrf_token_is_refused_and_writes_nothing(newcomer, headers):
    before = _state()
    response = signed_in(newcomer).post(CREATE, {"name": "Grandpa Joe"}, **headers)
    assert response.status_code == 403
    assert _state() == before


def test_signed_out_visitors_are_sent_to_sign_in_and_nothing_is_written(db):
    before = _state()
    for response in (Client().get(CREATE), Client().post(CREATE, {"name": "Grandpa Joe"})):
        assert response.status_code == 302
        assert response["Location"] == f"/accounts/login/?next={CREATE}"
    assert _state() == before


def test_only_post_creates(newcomer):
    assert signed_in(newcomer).get(CREATE).status_code == 405
    assert not Legacy.objects.exists()
