"""Families by consent (issue 13): who is in a family, invitations, accepting and declining,
removing a member and leaving through the API; and the invitations page and the legacy page's
invite form. Exact statuses and bodies; a refused request changes nothing."""

import threading
from datetime import UTC, datetime

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connections
from django.urls import reverse

from facts import selectors, services
from facts.models import Legacy, LegacyFact, LegacyInvitation, LegacyMembership
from memory_site.core.errors import NotFound
from tests.conftest import api_client_for
from tests.factories import InvitationFactory, LegacyFactFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def _state() -> tuple:
    return (
        Legacy.objects.count(),
        sorted(LegacyMembership.objects.values_list("legacy_id", "user__username", "role")),
        sorted(LegacyInvitation.objects.values_list("username", "status", "role")),
        sorted(LegacyFact.objects.values_list("content", "visibility")),
    )


def _sent(username: str, role: str = "member") -> dict:
    return {
        "username": username,
        "role": role,
        "detail": f"If {username} has an account, they can now accept or decline the "
        "invitation to Rose Whitfield's family.",
    }


def _invitations_url(family) -> str:
    return f"/api/legacies/{family.legacy.pk}/invitations"


@pytest.fixture
def cousin(db):
    return UserFactory(username="cousin")


@pytest.fixture
def invitation(family, cousin):
    return InvitationFactory(legacy=family.legacy, invited_user=cousin, invited_by=family.owner)


# --- Who is in the family ------------------------------------------------------------------


def test_members_see_the_family_with_roles_longest_standing_first(family, member_client):
    LegacyMembership.objects.filter(user=family.owner).update(
        joined_at=datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    )
    LegacyMembership.objects.filter(user=family.member).update(
        joined_at=datetime(2025, 4, 2, 9, 0, tzinfo=UTC)
    )
    response = member_client.get(f"/api/legacies/{family.legacy.pk}/members")
    assert response.status_code == 200
    assert response.json() == {
        "members": [
            {"username": "owner", "external_id": None, "role": "owner",
             "joined_at": "2025-03-01T09:00:00Z"},
            {"username": "member", "external_id": None, "role": "member",
             "joined_at": "2025-04-02T09:00:00Z"},
        ],
        "total": 2,
    }


def test_non_members_do_not_see_the_family(family, anon_client):
    url = f"/api/legacies/{family.legacy.pk}/members"
    for user in (family.stranger, family.other_member):
        response = api_client_for(user).get(url)
        assert response.status_code == 404
        assert response.json() == {"detail": "Not found.", "code": "not_found"}
    assert anon_client.get(url).status_code == 401


# --- Inviting -------------------------------------------------------------------------------


def test_an_owner_invites_and_the_person_is_not_a_member_yet(family, owner_client, cousin):
    response = owner_client.post(
        _invitations_url(family), {"username": "cousin", "role": "owner"}, format="json"
    )
    assert response.status_code == 202
    assert response.json() == _sent("cousin", "owner")
    invitation = LegacyInvitation.objects.get()
    assert (invitation.invited_user, invitation.invited_by, invitation.role, invitation.status) == (
        cousin, family.owner, "owner", "pending"
    )
    assert not LegacyMembership.objects.filter(user=cousin).exists()


def test_an_unknown_and_a_known_username_answer_the_same(family, owner_client, cousin):
    known = owner_client.post(_invitations_url(family), {"username": "cousin"}, format="json")
    unknown = owner_client.post(_invitations_url(family), {"username": "nobody"}, format="json")
    assert (known.status_code, unknown.status_code) == (202, 202)
    assert known.json() == _sent("cousin")
    assert unknown.json() == _sent("nobody")
    assert known.json()["detail"].replace("cousin", "X") == unknown.json()["detail"].replace(
        "nobody", "X"
    )
    # Twice is a 409 for both alike, so a second try tells nothing either.
    for username in ("cousin", "nobody"):
        again = owner_client.post(_invitations_url(family), {"username": username}, format="json")
        assert again.status_code == 409
        assert again.json() == {
            "detail": "That username already has a pending invitation to this legacy.",
            "code": "already_invited",
        }
    # The unknown name's invitation can never be answered by anyone.
    assert LegacyInvitation.objects.get(username="nobody").invited_user is None
    assert api_client_for(family.stranger).get("/api/invitations").json() == {
        "invitations": [], "total": 0,
    }


@pytest.mark.parametrize(
    ("payload", "status", "body"),
    [
        ({"username": "owner"}, 409, {
            "detail": "You are already a member: you cannot invite yourself.",
            "code": "already_member",
        }),
        ({"username": "member"}, 409, {
            "detail": "That user is already a member of this legacy.", "code": "already_member",
        }),
        ({"username": "cousin", "role": "admin"}, 400, {
            "detail": 'role: "admin" is not a valid choice.', "code": "invalid",
            "errors": {"role": ['"admin" is not a valid choice.']},
        }),
        ({"role": "member"}, 400, {
            "detail": "username: This field is required.", "code": "invalid",
            "errors": {"username": ["This field is required."]},
        }),
        ({"username": "cou\x00sin"}, 400, {
            "detail": "username: Null characters are not allowed.", "code": "invalid",
            "errors": {"username": ["Null characters are not allowed."]},
        }),
        # DELETE …/members/me is leaving: an owner could never remove an account named "me".
        ({"username": "Me"}, 400, {
            "detail": f"username: {services.ME_REFUSED}", "code": "invalid",
            "errors": {"username": [services.ME_REFUSED]},
        }),
    ],
)
def test_bad_invitations_are_refused_and_change_nothing(
    family, owner_client, cousin, payload, status, body
):
    before = _state()
    response = owner_client.post(_invitations_url(family), payload, format="json")
    assert response.status_code == status
    assert response.json() == body
    assert _state() == before


def test_only_an_owner_invites_and_strangers_see_nothing(family, member_client, cousin):
    before = _state()
    response = member_client.post(_invitations_url(family), {"username": "cousin"}, format="json")
    assert response.status_code == 403
    assert response.json() == {
        "detail": "Only the legacy's owner can invite people.", "code": "permission_denied",
    }
    for user in (family.stranger, family.other_member):
        response = api_client_for(user).post(
            _invitations_url(family), {"username": "cousin"}, format="json"
        )
        assert response.status_code == 404
        assert response.json() == {"detail": "Not found.", "code": "not_found"}
    assert _state() == before


def test_owners_list_and_withdraw_pending_invitations(family, owner_client, member_client, invitation):
    LegacyInvitation.objects.filter(pk=invitation.pk).update(
        created_at=datetime(2025, 5, 1, 8, 0, tzinfo=UTC)
    )
    response = owner_client.get(_invitations_url(family))
    assert response.status_code == 200
    assert response.json() == {
        "invitations": [{
            "id": str(invitation.pk), "username": "cousin", "external_id": None,
            "role": "member", "invited_by": "owner", "created_at": "2025-05-01T08:00:00Z",
        }],
        "total": 1,
    }
    before = _state()
    assert member_client.get(_invitations_url(family)).status_code == 403
    denied = member_client.delete(f"{_invitations_url(family)}/{invitation.pk}")
    assert denied.status_code == 403
    assert denied.json() == {
        "detail": "Only the legacy's owner can withdraw invitations.", "code": "permission_denied",
    }
    assert _state() == before
    response = owner_client.delete(f"{_invitations_url(family)}/{invitation.pk}")
    assert response.status_code == 204
    assert not LegacyInvitation.objects.exists()
    assert owner_client.delete(f"{_invitations_url(family)}/{invitation.pk}").status_code == 404


# --- Answering --------------------------------------------------------------------------------


def test_the_invitee_lists_and_accepts(family, cousin, invitation):
    LegacyInvitation.objects.filter(pk=invitation.pk).update(
        created_at=datetime(2025, 5, 1, 8, 0, tzinfo=UTC)
    )
    client = api_client_for(cousin)
    assert client.get("/api/invitations").json() == {
        "invitations": [{
            "id": str(invitation.pk), "legacy_id": str(family.legacy.pk),
            "legacy_name": "Rose Whitfield", "invited_by": "owner",
            "invited_by_external_id": None, "role": "member",
            "status": "pending", "created_at": "2025-05-01T08:00:00Z",
        }],
        "total": 1,
    }
    response = client.post(f"/api/invitations/{invitation.pk}/accept")
    assert response.status_code == 201
    membership = LegacyMembership.objects.get(legacy=family.legacy, user=cousin)
    assert response.json() == {
        "id": str(membership.pk), "legacy_id": str(family.legacy.pk), "username": "cousin",
        "external_id": None, "role": "member", "joined_at": membership.joined_at.isoformat().replace("+00:00", "Z"),
    }
    invitation.refresh_from_db()
    assert invitation.status == "accepted" and invitation.answered_at is not None
    assert client.get("/api/invitations").json() == {"invitations": [], "total": 0}
    # Now a member: the family and its facts are open.
    assert client.get(f"/api/legacies/{family.legacy.pk}/members").json()["total"] == 3
    before = _state()
    again = client.post(f"/api/invitations/{invitation.pk}/accept")
    assert again.status_code == 409
    assert again.json() == {
        "detail": "This invitation has already been answered.", "code": "invitation_answered",
    }
    assert _state() == before


def test_the_invitee_declines(family, cousin, invitation, owner_client):
    client = api_client_for(cousin)
    response = client.post(f"/api/invitations/{invitation.pk}/decline")
    assert response.status_code == 200
    body = response.json()
    assert (body["id"], body["status"], body["legacy_name"]) == (
        str(invitation.pk), "declined", "Rose Whitfield"
    )
    assert not LegacyMembership.objects.filter(user=cousin).exists()
    assert client.post(f"/api/invitations/{invitation.pk}/accept").status_code == 409
    # Declined is answered: the owner may ask again.
    again = owner_client.post(_invitations_url(family), {"username": "cousin"}, format="json")
    assert again.status_code == 202


def test_someone_elses_invitation_is_a_404_and_changes_nothing(family, invitation):
    before = _state()
    for user in (family.member, family.owner, family.stranger, family.other_member):
        client = api_client_for(user)
        for action in ("accept", "decline"):
            response = client.post(f"/api/invitations/{invitation.pk}/{action}")
            assert response.status_code == 404
            assert response.json() == {"detail": "Not found.", "code": "not_found"}
    assert api_client_for(family.owner).post("/api/invitations/not-a-uuid/accept").status_code == 404
    assert _state() == before


def test_accepting_after_the_legacy_is_gone_is_a_404(family, cousin, invitation):
    # The invitee holds the row already (the page was open) when the legacy is erased.
    held = selectors.invitation_for_invitee(user=cousin, invitation_id=invitation.pk)
    Legacy.objects.filter(pk=family.legacy.pk).delete()
    with pytest.raises(NotFound):
        services.invitation_accept(invitation=held, user=cousin)
    response = api_client_for(cousin).post(f"/api/invitations/{invitation.pk}/accept")
    assert response.status_code == 404
    assert not LegacyMembership.objects.filter(user=cousin).exists()


@pytest.mark.django_db(transaction=True)
def test_two_accepts_at_once_make_one_membership(family, cousin, invitation):
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def accept() -> None:
        try:
            barrier.wait(timeout=10)
            services.invitation_accept(invitation=invitation, user=cousin)
            outcomes.append("joined")
        except services.InvitationAnswered:
            outcomes.append("answered")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=accept) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == ["answered", "joined"]
    assert LegacyMembership.objects.filter(legacy=family.legacy, user=cousin).count() == 1


# --- Removing and leaving ---------------------------------------------------------------------


def test_an_owner_removes_a_member_as_if_they_had_left(family, owner_client, member_client):
    shared = LegacyFactFactory(
        legacy=family.legacy, user=family.member, content="Rose sang alto.", visibility="shared"
    )
    response = owner_client.delete(f"/api/legacies/{family.legacy.pk}/members/member")
    assert response.status_code == 200
    assert response.json() == {"username": "member", "external_id": None, "facts_made_private": 1,
                               "new_owner": None, "new_owner_external_id": None}
    assert not LegacyMembership.objects.filter(user=family.member).exists()
    # Their fact stays theirs but private; the family no longer sees it; they see nothing.
    shared.refresh_from_db()
    assert (shared.user, shared.visibility) == (family.member, "private")
    assert not selectors.facts_visible_to(family.owner, family.legacy).filter(pk=shared.pk).exists()
    assert member_client.get(f"/api/legacies/{family.legacy.pk}/members").status_code == 404


def test_a_removed_owner_s_invitations_go_with_them(family, owner_client, cousin):
    """A co-owner invites someone as owner and is then removed: accepted afterwards, their
    invitation would let whoever they chose take the legacy over."""
    co_owner = UserFactory(username="co-owner")
    MembershipFactory(legacy=family.legacy, user=co_owner, role="owner")
    sent = api_client_for(co_owner).post(
        _invitations_url(family), {"username": "cousin", "role": "owner"}, format="json")
    assert sent.status_code == 202
    kept = InvitationFactory(legacy=family.legacy, invited_user=UserFactory(username="aunt"),
                             invited_by=family.owner)
    [invitation] = LegacyInvitation.objects.filter(invited_by=co_owner)

    removed = owner_client.delete(f"/api/legacies/{family.legacy.pk}/members/co-owner")

    assert removed.status_code == 200
    client = api_client_for(cousin)
    assert client.get("/api/invitations").json() == {"invitations": [], "total": 0}
    response = client.post(f"/api/invitations/{invitation.pk}/accept")
    assert response.status_code == 404
    assert not LegacyMembership.objects.filter(user=cousin).exists()
    # The remaining owner's own invitation stands.
    assert LegacyInvitation.objects.get(pk=kept.pk).status == "pending"


@pytest.mark.django_db(transaction=True)
def test_an_owner_removed_while_inviting_sends_no_invitation(family, cousin, monkeypatch):
    """The owner check ran before the family lock only: an owner removed in between still
    sent an invitation, which nobody would ever withdraw."""
    import time

    co_owner = UserFactory(username="co-owner")
    MembershipFactory(legacy=family.legacy, user=co_owner, role="owner")
    checked = threading.Event()
    require = services.require_owner

    def slow(**kwargs):
        require(**kwargs)
        checked.set()
        time.sleep(0.4)

    monkeypatch.setattr(services, "require_owner", slow)
    outcome = []

    def invite() -> None:
        try:
            services.invitation_create(legacy=family.legacy, invited_by=co_owner,
                                       username="cousin", role="owner")
            outcome.append("sent")
        except PermissionDenied:
            outcome.append("refused")
        finally:
            connections.close_all()

    thread = threading.Thread(target=invite)
    thread.start()
    assert checked.wait(timeout=10)
    services.membership_remove(legacy=family.legacy, removed_by=family.owner,
                               username="co-owner")
    thread.join(timeout=30)

    assert outcome == ["refused"]
    assert not LegacyInvitation.objects.filter(username="cousin").exists()


def test_the_upgrade_withdraws_invitations_that_no_longer_stand(family, cousin):
    """Migration 0004: pending invitations of someone no longer an owner, or to "me"."""
    from importlib import import_module

    from django.apps import apps

    former = UserFactory(username="former-owner")
    stale = InvitationFactory(legacy=family.legacy, invited_user=cousin, invited_by=former)
    to_me = InvitationFactory(legacy=family.legacy, username="me", invited_by=family.owner)
    by_member = InvitationFactory(legacy=family.legacy, username="aunt", invited_by=family.member)
    standing = InvitationFactory(legacy=family.legacy, username="uncle", invited_by=family.owner)
    answered = InvitationFactory(legacy=family.legacy, username="nephew", invited_by=former,
                                 status="accepted")

    import_module("facts.migrations.0004_withdraw_stale_invitations").withdraw(apps, None)

    left = set(LegacyInvitation.objects.values_list("pk", flat=True))
    assert left == {standing.pk, answered.pk}
    assert not left & {stale.pk, to_me.pk, by_member.pk}


def test_a_member_cannot_remove_anyone(family, member_client):
    before = _state()
    response = member_client.delete(f"/api/legacies/{family.legacy.pk}/members/owner")
    assert response.status_code == 403
    assert response.json() == {
        "detail": "Only the legacy's owner can remove members.", "code": "permission_denied",
    }
    for user in (family.stranger, family.other_member):
        response = api_client_for(user).delete(f"/api/legacies/{family.legacy.pk}/members/member")
        assert response.status_code == 404
    assert _state() == before


def test_removing_someone_not_in_the_family_is_a_404(family, owner_client):
    before = _state()
    response = owner_client.delete(f"/api/legacies/{family.legacy.pk}/members/stranger")
    assert response.status_code == 404
    assert response.json() == {
        "detail": "Nobody of that username is a member of this legacy.", "code": "not_found",
    }
    assert _state() == before


@pytest.mark.parametrize("path", ["me", "owner"])
def test_the_only_owner_leaves_and_hands_the_legacy_on(family, owner_client, path):
    response = owner_client.delete(f"/api/legacies/{family.legacy.pk}/members/{path}")
    assert response.status_code == 200
    assert response.json() == {"username": "owner", "external_id": None, "facts_made_private": 0,
                               "new_owner": "member", "new_owner_external_id": None}
    assert LegacyMembership.objects.get(legacy=family.legacy).user == family.member
    assert LegacyMembership.objects.get(legacy=family.legacy).role == "owner"
    assert Legacy.objects.get(pk=family.legacy.pk).created_by == family.member


def test_the_last_member_cannot_leave(family, member_client):
    LegacyMembership.objects.filter(user=family.owner).delete()
    before = _state()
    response = member_client.delete(f"/api/legacies/{family.legacy.pk}/members/me")
    assert response.status_code == 409
    assert response.json() == {
        "detail": services.LastMemberCannotLeave.default_message, "code": "last_member",
    }
    assert _state() == before


# --- The dashboard ----------------------------------------------------------------------------


def test_the_invitations_page_and_the_count_in_the_nav(client, family, cousin, invitation):
    client.force_login(cousin)
    page = client.get(reverse("facts:invitations"))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Invitations (1)" in html
    assert "<strong>owner</strong> invites you to the family of <strong>Rose Whitfield</strong>" in html


def test_accepting_without_javascript_goes_to_the_legacy(client, family, cousin, invitation):
    client.force_login(cousin)
    url = reverse("facts:invitation_answer", args=[invitation.pk])
    response = client.post(url, {"answer": "accept"})
    assert response.status_code == 302
    assert response["Location"] == reverse("facts:legacy_detail", args=[family.legacy.pk])
    assert LegacyMembership.objects.filter(legacy=family.legacy, user=cousin).exists()
    page = client.get(response["Location"])
    assert "You have joined the family of Rose Whitfield." in page.content.decode()
    assert "Invitations (0)" in page.content.decode()


def test_declining_with_htmx_answers_in_place_with_the_new_count(client, family, cousin, invitation):
    client.force_login(cousin)
    url = reverse("facts:invitation_answer", args=[invitation.pk])
    response = client.post(url, {"answer": "decline"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert "You have declined the invitation to Rose Whitfield&#x27;s family." in html
    assert 'id="nav-invitations"' in html and 'hx-swap-oob="true"' in html
    assert "Invitations (0)" in html
    assert LegacyInvitation.objects.get().status == "declined"


def test_a_bad_answer_or_someone_elses_invitation_changes_nothing(client, family, invitation):
    client.force_login(family.member)
    before = _state()
    url = reverse("facts:invitation_answer", args=[invitation.pk])
    assert client.post(url, {"answer": "accept"}).status_code == 404
    client.force_login(invitation.invited_user)
    assert client.post(url, {"answer": "maybe"}).status_code == 400
    assert _state() == before


def test_the_legacy_page_shows_owners_the_invite_form_and_pending_invitations(
    client, family, invitation
):
    client.force_login(family.owner)
    html = client.get(reverse("facts:legacy_detail", args=[family.legacy.pk])).content.decode()
    assert "Send invitation" in html
    assert 'id="pending-cousin"' in html
    client.force_login(family.member)
    html = client.get(reverse("facts:legacy_detail", args=[family.legacy.pk])).content.decode()
    assert "Send invitation" not in html
    assert "pending-cousin" not in html


def test_inviting_on_the_legacy_page(client, family, cousin):
    client.force_login(family.owner)
    url = reverse("facts:legacy_invite", args=[family.legacy.pk])
    for username in ("cousin", "nobody"):
        response = client.post(url, {"username": username, "role": "member"}, follow=True)
        assert response.status_code == 200
        assert _sent(username)["detail"].replace("'", "&#x27;") in response.content.decode()
    before = _state()
    response = client.post(url, {"username": "member", "role": "member"})
    assert response.status_code == 409
    assert "That user is already a member of this legacy." in response.content.decode()
    response = client.post(url, {"username": "owner", "role": "member"})
    assert response.status_code == 409
    assert "you cannot invite yourself" in response.content.decode()
    client.force_login(family.member)
    assert client.post(url, {"username": "stranger", "role": "member"}).status_code == 403
    assert _state() == before


def test_erasing_ones_data_drops_the_invitations_to_and_from_one(family, cousin, invitation):
    MembershipFactory(legacy=family.legacy, user=UserFactory(username="aunt"))
    services.user_data_erase(user=cousin)
    assert not LegacyInvitation.objects.exists()
