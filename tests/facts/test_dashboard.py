"""The facts dashboard with Django's test client (CSRF enforced): reading, htmx fragments,
no-JavaScript forms, inline errors, and that denied or invalid requests change nothing."""

import re
import uuid

import pytest
from django.test import Client

from facts.models import LegacyFact
from tests.factories import ConversationFactory, LegacyFactFactory
from tests.support.csrf import csrf_token, signed_in

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def _snapshot() -> list[tuple]:
    return list(
        LegacyFact.objects.order_by("pk").values_list(
            "pk", "category", "content", "visibility", "updated_at"
        )
    )


_signed_in = signed_in


_csrf = csrf_token


@pytest.fixture
def page(family) -> str:
    return f"/legacies/{family.legacy.pk}/facts"


@pytest.fixture
def facts(family):
    conversation = ConversationFactory(legacy=family.legacy, user=family.owner, title="Sunday call")
    return {
        "mine_private": LegacyFactFactory(
            legacy=family.legacy, user=family.owner, category="hobby",
            content="She kept bees behind the barn.", source_conversation=conversation,
            source_range_start=20, source_range_end=40,
        ),
        "mine_shared": LegacyFactFactory(
            legacy=family.legacy, user=family.owner, category="occupation",
            content="She taught piano for forty years.", visibility="shared",
        ),
        "theirs_shared": LegacyFactFactory(
            legacy=family.legacy, user=family.member, category="relationship",
            content="She called her sister every Sunday.", visibility="shared",
        ),
        "theirs_private": LegacyFactFactory(
            legacy=family.legacy, user=family.member, category="habit",
            content="She never missed the morning news.",
        ),
    }


# --- Reading ---------------------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_sign_in(family, page):
    response = Client().get(page)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={page}"


def test_legacy_list_links_to_the_facts_page(family, page):
    response = _signed_in(family.owner).get("/")
    assert response.status_code == 200
    assert f'href="{page}"' in response.content.decode()


def test_facts_page_shows_mine_grouped_and_others_shared_read_only(family, facts, page):
    response = _signed_in(family.owner).get(page)
    assert response.status_code == 200
    html = response.content.decode()
    assert "She kept bees behind the barn." in html
    assert "She taught piano for forty years." in html
    assert "She called her sister every Sunday." in html
    assert "She never missed the morning news." not in html
    assert '<h3 class="category">Hobby</h3>' in html
    assert '<h3 class="category">Occupation</h3>' in html
    # Others' shared fact: author named, no controls.
    theirs_id = facts["theirs_shared"].pk
    theirs = re.search(rf'<li class="fact is-shared" id="fact-{theirs_id}">.*?</li>', html, re.S)[0]
    assert (
        '<span class="fact-origin">by <strong class="author">member</strong></span>'
    ) in theirs
    assert '<span class="badge shared">Shared with family</span>' in theirs
    assert "Edit" not in theirs and "Delete" not in theirs
    # My fact says whether it is shared once: by its switch, not by a badge as well.
    mine_id = facts["mine_private"].pk
    mine = re.search(rf'<li class="fact" id="fact-{mine_id}">.*?</li>', html, re.S)[0]
    assert re.findall(r">\s*(Private|Shared)\s*<", mine) == ["Private"]
    assert 'role="switch" aria-checked="false"' in mine
    # Where my fact came from: the transcript, scrolled to its range.
    conversation_id = facts["mine_private"].source_conversation_id
    assert (
        f'href="/conversations/{conversation_id}?from=20&amp;to=40#m-20">'
        "from “Sunday call”, messages 20–39</a>"
    ) in html
    assert "added by hand" in html


def test_facts_page_of_someone_else_legacy_is_a_404(family, facts, page):
    for user in (family.stranger, family.other_member):
        assert _signed_in(user).get(page).status_code == 404


def test_empty_state_explains_where_facts_come_from(family, page):
    html = _signed_in(family.member).get(page).content.decode()
    assert "No facts about Rose Whitfield yet." in html
    assert "Facts come from your conversations with the agent" in html


def test_filters_narrow_the_list_and_htmx_gets_only_the_fragment(family, facts, page):
    client = _signed_in(family.owner)
    full = client.get(page, {"category": "hobby"})
    assert full.status_code == 200
    html = full.content.decode()
    assert "<html" in html
    assert "She kept bees" in html and "taught piano" not in html and "her sister" not in html

    fragment = client.get(page, {"q": "SISTER"}, **HTMX)
    assert fragment.status_code == 200
    html = fragment.content.decode()
    assert "<html" not in html
    assert "her sister" in html and "kept bees" not in html and "taught piano" not in html
    assert "None of your facts match this filter." in html


def test_an_unknown_category_filter_is_reported_inline_and_ignored(family, facts, page):
    html = _signed_in(family.owner).get(page, {"category": "gossip"}).content.decode()
    assert "There is no category “gossip”; showing every category." in html
    assert "She kept bees" in html and "taught piano" in html


# --- CSRF: a POST without the token is refused and changes nothing ------------------------------


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/facts/{mine_private}/visibility", {"visibility": "shared"}),
        ("/facts/{mine_private}/edit", {"content": "Changed without a token.", "category": "hobby"}),
        ("/facts/{mine_private}/delete", {}),
        ("/legacies/{legacy}/facts/add", {"category": "hobby", "content": "Added without a token."}),
    ],
)
def test_posts_without_a_csrf_token_are_refused(family, facts, path, data):
    before = _snapshot()
    url = path.format(mine_private=facts["mine_private"].pk, legacy=family.legacy.pk)
    response = _signed_in(family.owner).post(url, data, **HTMX)
    assert response.status_code == 403
    assert _snapshot() == before


# --- Toggle ------------------------------------------------------------------------------------


def test_toggle_with_htmx_rerenders_the_row_with_a_confirmation(family, facts, page):
    client = _signed_in(family.owner)
    fact = facts["mine_private"]
    response = client.post(
        f"/facts/{fact.pk}/visibility",
        {"visibility": "shared", "csrfmiddlewaretoken": _csrf(client, page)}, **HTMX,
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert html.startswith(f'<li class="fact is-shared" id="fact-{fact.pk}">')
    assert '<p class="ok confirm" role="status">Shared with the family.</p>' in html
    assert 'aria-checked="true"' in html
    fact.refresh_from_db()
    assert fact.visibility == "shared"
    assert "She kept bees" in _signed_in(family.member).get(page).content.decode()


def test_toggle_without_javascript_redirects_back_with_a_message(family, facts, page):
    client = _signed_in(family.owner)
    fact = facts["mine_shared"]
    response = client.post(
        f"/facts/{fact.pk}/visibility",
        {"visibility": "private", "csrfmiddlewaretoken": _csrf(client, page)},
    )
    assert response.status_code == 302
    assert response["Location"] == f"{page}#fact-{fact.pk}"
    fact.refresh_from_db()
    assert fact.visibility == "private"
    assert "Now private: only you can see it." in client.get(page).content.decode()


def test_toggle_with_an_invalid_value_shows_an_inline_error(family, facts, page):
    client = _signed_in(family.owner)
    token = _csrf(client, page)
    before = _snapshot()
    fact = facts["mine_private"]
    response = client.post(
        f"/facts/{fact.pk}/visibility", {"visibility": "public", "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 400
    assert '<p class="error" role="alert">Must be private or shared.</p>' in response.content.decode()
    response = client.post(
        f"/facts/{fact.pk}/visibility", {"visibility": "public", "csrfmiddlewaretoken": token},
        **HTMX,
    )
    assert response.status_code == 200
    assert '<p class="error" role="alert">Must be private or shared.</p>' in response.content.decode()
    assert _snapshot() == before


def test_fact_text_boxes_allow_what_the_server_accepts(family, facts, page, settings):
    settings.FACT_MAX_CHARS = 420
    client = _signed_in(family.owner)
    fact = facts["mine_private"]
    for html in (
        client.get(page).content.decode(),
        client.get(f"/facts/{fact.pk}/edit").content.decode(),
        client.get(f"/facts/{fact.pk}/edit", **HTMX).content.decode(),
    ):
        boxes = re.findall(r'<textarea name="content"[^>]*>', html)
        assert boxes == ['<textarea name="content" rows="2" maxlength="420">']


# --- Edit ----------------------------------------------------------------------------------


def test_edit_in_place_with_htmx(family, facts, page):
    client = _signed_in(family.owner)
    fact = facts["mine_private"]
    form = client.get(f"/facts/{fact.pk}/edit", **HTMX)
    assert form.status_code == 200
    assert form.content.decode().startswith(f'<li class="fact editing" id="fact-{fact.pk}">')
    response = client.post(
        f"/facts/{fact.pk}/edit",
        {"content": "She kept six hives of bees.", "category": "hobby",
         "csrfmiddlewaretoken": _csrf(client, page)},
        **HTMX,
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "She kept six hives of bees." in html
    assert '<p class="ok confirm" role="status">Saved.</p>' in html
    fact.refresh_from_db()
    assert fact.content == "She kept six hives of bees."


def test_edit_without_javascript_has_its_own_page(family, facts, page):
    client = _signed_in(family.owner)
    fact = facts["mine_private"]
    form = client.get(f"/facts/{fact.pk}/edit")
    assert form.status_code == 200
    assert "<h1>Edit a fact</h1>" in form.content.decode()
    response = client.post(
        f"/facts/{fact.pk}/edit",
        {"content": "She kept bees.", "category": "habit",
         "csrfmiddlewaretoken": _csrf(client, page)},
    )
    assert response.status_code == 302
    assert response["Location"] == f"{page}#fact-{fact.pk}"
    fact.refresh_from_db()
    assert (fact.content, fact.category) == ("She kept bees.", "habit")


@pytest.mark.parametrize("htmx", [True, False])
def test_edit_with_invalid_input_shows_the_error_inline_and_keeps_the_input(family, facts, page, htmx):
    client = _signed_in(family.owner)
    token = _csrf(client, page)
    before = _snapshot()
    fact = facts["mine_private"]
    response = client.post(
        f"/facts/{fact.pk}/edit",
        {"content": "no", "category": "gossip", "csrfmiddlewaretoken": token},
        **(HTMX if htmx else {}),
    )
    assert response.status_code == (200 if htmx else 400)
    html = response.content.decode()
    assert '<p class="error" role="alert">Must be 3–500 characters.</p>' in html
    assert "Must be one of: personality, hobby" in html
    assert ">no</textarea>" in html
    assert _snapshot() == before


# --- Delete --------------------------------------------------------------------------------


def test_delete_asks_for_confirmation_then_deletes_with_htmx(family, facts, page):
    client = _signed_in(family.owner)
    fact = facts["mine_shared"]
    confirm = client.get(f"/facts/{fact.pk}/delete", **HTMX)
    assert confirm.status_code == 200
    html = confirm.content.decode()
    assert "Delete this fact? The other members will no longer see it." in html
    assert LegacyFact.objects.filter(pk=fact.pk).exists()
    response = client.post(
        f"/facts/{fact.pk}/delete", {"csrfmiddlewaretoken": _csrf(client, page)}, **HTMX
    )
    assert response.status_code == 200
    assert "Fact deleted." in response.content.decode()
    assert not LegacyFact.objects.filter(pk=fact.pk).exists()


def test_delete_without_javascript_confirms_on_a_page_then_redirects(family, facts, page):
    client = _signed_in(family.owner)
    fact = facts["mine_private"]
    confirm = client.get(f"/facts/{fact.pk}/delete")
    assert confirm.status_code == 200
    assert "<h1>Delete a fact</h1>" in confirm.content.decode()
    response = client.post(f"/facts/{fact.pk}/delete", {"csrfmiddlewaretoken": _csrf(client, page)})
    assert response.status_code == 302
    assert response["Location"] == page
    assert not LegacyFact.objects.filter(pk=fact.pk).exists()
    assert "Fact deleted." in client.get(page).content.decode()


def test_cancel_goes_back_to_the_row(family, facts, page):
    client = _signed_in(family.owner)
    fact = facts["mine_private"]
    row = client.get(f"/facts/{fact.pk}", **HTMX)
    assert row.status_code == 200
    assert row.content.decode().startswith(f'<li class="fact" id="fact-{fact.pk}">')
    no_js = client.get(f"/facts/{fact.pk}")
    assert no_js.status_code == 302
    assert no_js["Location"] == f"{page}#fact-{fact.pk}"


# --- Add -----------------------------------------------------------------------------------


def test_add_a_fact_by_hand_then_a_duplicate(family, page):
    client = _signed_in(family.member)
    token = _csrf(client, page)
    response = client.post(
        f"{page}/add",
        {"category": "preference", "content": "She took her tea with honey.",
         "visibility": "shared", "csrfmiddlewaretoken": token},
    )
    fact = LegacyFact.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"{page}#fact-{fact.pk}"
    assert (fact.user, fact.visibility) == (family.member, "shared")

    before = _snapshot()
    response = client.post(
        f"{page}/add",
        {"category": "habit", "content": "she took her TEA with honey", "csrfmiddlewaretoken": token},
        follow=True,
    )
    assert "You already have this fact; nothing was added." in response.content.decode()
    assert _snapshot() == before


def test_add_with_invalid_input_shows_inline_errors_and_writes_nothing(family, page):
    client = _signed_in(family.member)
    response = client.post(
        f"{page}/add",
        {"category": "gossip", "content": "ab", "csrfmiddlewaretoken": _csrf(client, page)},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert '<p class="error" role="alert">Must be 3–500 characters.</p>' in html
    assert "Must be one of: personality" in html
    assert "<details class=\"card add-fact\" open>" in html
    assert LegacyFact.objects.count() == 0


# --- Authorization: only the author changes a fact ---------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "data"),
    [
        ("get", "/facts/{id}", {}),
        ("get", "/facts/{id}/edit", {}),
        ("get", "/facts/{id}/delete", {}),
        ("post", "/facts/{id}/visibility", {"visibility": "private"}),
        ("post", "/facts/{id}/edit", {"content": "Rewritten by someone else.", "category": "other"}),
        ("post", "/facts/{id}/delete", {}),
    ],
)
@pytest.mark.parametrize(
    ("fact_key", "caller", "status"),
    [
        ("theirs_shared", "owner", 403),
        ("theirs_private", "owner", 404),
        ("theirs_shared", "stranger", 404),
        ("theirs_shared", "other_member", 404),
    ],
)
def test_fact_pages_deny_everyone_but_the_author(family, facts, page, method, path, data,
                                                 fact_key, caller, status):
    if path == "/facts/{id}" and status == 403:
        status = 200  # a fellow member may see a shared fact's row; only its controls are denied
    client = _signed_in(getattr(family, caller))
    if method == "post":
        data = {**data, "csrfmiddlewaretoken": _csrf(client, "/")}
    before = _snapshot()
    url = path.format(id=facts[fact_key].pk)
    response = getattr(client, method)(url, data, **HTMX)
    assert response.status_code == status
    assert _snapshot() == before


def test_unknown_fact_and_non_uuid_paths_are_404(family):
    client = _signed_in(family.owner)
    assert client.get(f"/facts/{uuid.uuid4()}/edit").status_code == 404
    assert client.get("/facts/not-a-uuid/edit").status_code == 404


def test_sign_in_and_sign_out(family):
    client = Client(enforce_csrf_checks=True)
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())[1]
    bad = client.post(
        "/accounts/login/",
        {"username": "owner", "password": "wrong", "csrfmiddlewaretoken": token},
    )
    assert bad.status_code == 200
    assert "That username and password did not match." in bad.content.decode()
    response = client.post(
        "/accounts/login/",
        {"username": "owner", "password": "pw-for-tests", "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    assert response["Location"] == "/"
    token = _csrf(client, "/")
    response = client.post("/accounts/logout/", {"csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/"
    assert client.get("/").status_code == 302
