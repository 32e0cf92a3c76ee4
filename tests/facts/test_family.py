"""The family on the legacy page, and leaving it (docs/facts.md "Family"): who sees the page,
what leaving does to ownership, facts and conversations, the last member's refusal, and that a
denied request changes nothing."""

import contextlib
import re
import threading
import time
from datetime import UTC, datetime

import pytest
from django.db import connections
from django.test import Client

from conversations.models import Conversation
from conversations.selectors import conversations_for_user
from facts import selectors, services
from facts.models import FactConflict, Legacy, LegacyFact, LegacyMembership
from memory_site.core.errors import NotFound
from tests.factories import (
    ConversationFactory,
    LegacyFactFactory,
    LegacyFactory,
    MembershipFactory,
    UserFactory,
)
from tests.support.csrf import csrf_token, signed_in

pytestmark = pytest.mark.django_db


_signed_in = signed_in


_csrf = csrf_token


def _post(client: Client, url: str, data: dict, *, token_from: str) -> object:
    return client.post(url, {**data, "csrfmiddlewaretoken": _csrf(client, token_from)})


def _text(response) -> str:
    """The page's words, without markup."""
    return " ".join(re.sub(r"<[^>]+>", "", response.content.decode()).split())


def _state() -> tuple:
    return (
        sorted(Legacy.objects.values_list("pk", "created_by_id")),
        sorted(LegacyMembership.objects.values_list("legacy_id", "user_id", "role")),
        sorted(LegacyFact.objects.values_list("pk", "visibility", "updated_at")),
    )


def _joined(legacy, user, when: datetime) -> None:
    LegacyMembership.objects.filter(legacy=legacy, user=user).update(joined_at=when)


@pytest.fixture
def family_facts(family):
    """Each member's facts about the legacy, shared and private, and a conversation each."""
    legacy, owner, member = family.legacy, family.owner, family.member
    _joined(legacy, owner, datetime(2025, 3, 1, 9, 0, tzinfo=UTC))
    _joined(legacy, member, datetime(2025, 4, 2, 9, 0, tzinfo=UTC))
    return {
        "owner_shared": LegacyFactFactory(
            legacy=legacy, user=owner, content="Rose taught piano.", visibility="shared"
        ),
        "member_shared": LegacyFactFactory(
            legacy=legacy, user=member, content="Rose called her sister on Sundays.",
            visibility="shared",
        ),
        "member_shared_2": LegacyFactFactory(
            legacy=legacy, user=member, content="Rose grew dahlias.", visibility="shared"
        ),
        "member_private": LegacyFactFactory(
            legacy=legacy, user=member, content="Rose took honey in her tea."
        ),
        "member_conversation": ConversationFactory(legacy=legacy, user=member),
        "owner_conversation": ConversationFactory(legacy=legacy, user=owner),
    }


def _detail(legacy) -> str:
    return f"/legacies/{legacy.pk}"


def _leave(legacy) -> str:
    return f"/legacies/{legacy.pk}/leave"


# --- The legacy page ---------------------------------------------------------------------------


def test_a_member_sees_the_family_with_roles_and_joined_dates(family, family_facts):
    response = _signed_in(family.member).get(_detail(family.legacy))
    assert response.status_code == 200
    html = response.content.decode()
    rows = re.findall(r'<tr id="member-(\w+)">(.*?)</tr>', html, re.S)
    assert [name for name, _ in rows] == ["owner", "member"]
    owner_row, member_row = (re.sub(r"<[^>]+>", " ", row) for _, row in rows)
    assert "Owner" in owner_row and "1 March 2025" in owner_row
    assert "Member" in member_row and "2 April 2025" in member_row and "you" in member_row
    assert f'href="/legacies/{family.legacy.pk}/facts"' in html
    assert f'href="/legacies/{family.legacy.pk}/leave"' in html
    assert "2 members" in html


def test_the_legacy_list_and_the_facts_page_link_to_the_family(family):
    client = _signed_in(family.member)
    link = f'href="/legacies/{family.legacy.pk}"'
    assert link in client.get("/").content.decode()
    assert link in client.get(f"/legacies/{family.legacy.pk}/facts").content.decode()


PAGES = [("get", "{detail}"), ("get", "{leave}"), ("post", "{leave}")]


@pytest.mark.parametrize("caller", ["stranger", "other_member"])
@pytest.mark.parametrize(("method", "template"), PAGES)
def test_anyone_outside_the_family_gets_a_404_and_changes_nothing(
    family, family_facts, caller, method, template
):
    url = template.format(detail=_detail(family.legacy), leave=_leave(family.legacy))
    client = Client()
    client.force_login(getattr(family, caller))
    before = _state()
    response = getattr(client, method)(url, {"confirm": "on"} if method == "post" else None)
    assert response.status_code == 404
    html = response.content.decode()
    assert "Rose Whitfield" not in html and "owner" not in html
    assert _state() == before


@pytest.mark.parametrize(("method", "template"), PAGES)
def test_signed_out_visitors_are_sent_to_sign_in(family, method, template):
    url = template.format(detail=_detail(family.legacy), leave=_leave(family.legacy))
    before = _state()
    response = getattr(Client(), method)(url)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={url}"
    assert _state() == before


def test_an_unknown_legacy_is_a_404(family):
    client = _signed_in(family.member)
    assert client.get("/legacies/00000000-0000-0000-0000-000000000000").status_code == 404
    assert client.get("/legacies/not-a-uuid").status_code == 404


# --- Leaving -----------------------------------------------------------------------------------


def test_the_confirmation_page_says_what_happens(family, family_facts):
    response = _signed_in(family.member).get(_leave(family.legacy))
    assert response.status_code == 200
    text = _text(response)
    assert "Your 2 shared facts about Rose Whitfield become private" in text
    assert "Your conversations about Rose Whitfield stay yours" in text
    assert "becomes its owner" not in text
    assert 'name="confirm"' in response.content.decode()


def test_the_only_owner_is_told_who_takes_over(family, family_facts):
    response = _signed_in(family.owner).get(_leave(family.legacy))
    assert response.status_code == 200
    text = _text(response)
    assert "You are its only owner: member, the longest-standing member, becomes its owner." in text


def test_leaving_needs_the_confirmation_ticked(family, family_facts):
    client = _signed_in(family.member)
    before = _state()
    response = _post(client, _leave(family.legacy), {}, token_from=_leave(family.legacy))
    assert response.status_code == 400
    assert "Tick the box to confirm that you want to leave." in response.content.decode()
    assert _state() == before


def test_a_member_leaves(family, family_facts):
    legacy, member, owner = family.legacy, family.member, family.owner
    client = _signed_in(member)
    response = _post(client, _leave(legacy), {"confirm": "on"}, token_from=_leave(legacy))
    assert response.status_code == 302
    assert response["Location"] == "/"
    listing = client.get("/")
    assert listing.status_code == 200
    html = listing.content.decode()
    assert "You have left the family of Rose Whitfield. Your 2 shared facts are now private." in html
    assert "Rose Whitfield" not in html.replace(
        "You have left the family of Rose Whitfield", ""
    )

    assert not LegacyMembership.objects.filter(legacy=legacy, user=member).exists()
    assert list(LegacyMembership.objects.filter(legacy=legacy).values_list("user", "role")) == [
        (owner.pk, "owner")
    ]
    assert Legacy.objects.get(pk=legacy.pk).created_by == owner
    # The family no longer sees the leaver's facts; the leaver no longer sees the legacy.
    assert list(selectors.facts_visible_to(owner, legacy)) == [family_facts["owner_shared"]]
    assert not selectors.facts_visible_to(member, legacy).exists()
    assert not selectors.legacies_for_user(member).filter(pk=legacy.pk).exists()
    assert client.get(_detail(legacy)).status_code == 404
    assert client.get(f"/legacies/{legacy.pk}/facts").status_code == 404
    assert client.get(_leave(legacy)).status_code == 404
    # The facts stay the leaver's, private, in their export; their conversation stays theirs
    # but cannot be reached while they are not a member.
    mine = LegacyFact.objects.filter(user=member).order_by("content")
    assert [(f.content, f.visibility) for f in mine] == [
        ("Rose called her sister on Sundays.", "private"),
        ("Rose grew dahlias.", "private"),
        ("Rose took honey in her tea.", "private"),
    ]
    assert set(selectors.user_data_export(member)["facts"]) == set(mine)
    assert Conversation.objects.filter(
        pk=family_facts["member_conversation"].pk, user=member
    ).exists()
    assert not conversations_for_user(member).exists()
    assert list(conversations_for_user(owner)) == [family_facts["owner_conversation"]]


def test_the_only_owner_leaves_and_the_longest_standing_member_becomes_owner(family, family_facts):
    legacy, owner, member = family.legacy, family.owner, family.member
    newer = UserFactory(username="newer")
    MembershipFactory(legacy=legacy, user=newer)
    _joined(legacy, newer, datetime(2025, 5, 1, 9, 0, tzinfo=UTC))
    client = _signed_in(owner)
    response = _post(client, _leave(legacy), {"confirm": "on"}, token_from=_leave(legacy))
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert "You have left the family of Rose Whitfield. Your 1 shared fact is now private. " \
        "member is its owner now." in client.get("/").content.decode()
    roles = dict(LegacyMembership.objects.filter(legacy=legacy).values_list("user", "role"))
    assert roles == {member.pk: "owner", newer.pk: "member"}
    assert Legacy.objects.get(pk=legacy.pk).created_by == member
    assert LegacyFact.objects.get(pk=family_facts["owner_shared"].pk).visibility == "private"
    assert list(selectors.facts_visible_to(newer, legacy).values_list("content", flat=True)) == [
        "Rose called her sister on Sundays.", "Rose grew dahlias."
    ]


def test_an_owner_leaves_while_another_owner_stays_and_nobody_is_promoted(family):
    legacy, owner, member = family.legacy, family.owner, family.member
    co_owner = UserFactory(username="coowner")
    MembershipFactory(legacy=legacy, user=co_owner, role="owner")
    _joined(legacy, member, datetime(2025, 1, 1, tzinfo=UTC))
    _joined(legacy, co_owner, datetime(2025, 6, 1, tzinfo=UTC))
    left = services.membership_leave(legacy=legacy, user=owner)
    assert left == services.MembershipLeft(facts_made_private=0, new_owner=None)
    roles = dict(LegacyMembership.objects.filter(legacy=legacy).values_list("user", "role"))
    assert roles == {member.pk: "member", co_owner.pk: "owner"}
    # created_by follows the remaining owner, as on erase.
    assert Legacy.objects.get(pk=legacy.pk).created_by == co_owner


def test_the_last_member_cannot_leave(family):
    alone = LegacyFactory(name="Walter Brandt", created_by=family.stranger)
    LegacyFactFactory(legacy=alone, user=family.stranger, visibility="shared")
    client = _signed_in(family.stranger)
    page = client.get(_leave(alone))
    assert page.status_code == 200
    html = page.content.decode()
    assert "You are the only member of Walter Brandt, so you cannot leave it" in html
    assert "erase your data instead" in html
    # What a dashboard user can do here is linked; the API is only for integrations.
    assert f'<a href="/legacies/{alone.pk}#invite-heading">Invite someone from the family</a>' in html
    assert f'<a href="/legacies/{alone.pk}/facts">your facts</a>' in html
    assert f'<a href="/legacies/{alone.pk}/conversations">your conversations</a>' in html
    assert "(for integrations: <code>DELETE /api/me/data</code>)" in html
    assert 'name="confirm"' not in html
    before = _state()
    response = _post(client, _leave(alone), {"confirm": "on"}, token_from=_detail(alone))
    # A forced POST (or everyone else leaving meanwhile) gets the page again, saying why.
    assert response.status_code == 409
    assert "You are the only member of Walter Brandt, so you cannot leave it" in (
        response.content.decode()
    )
    assert _state() == before
    assert selectors.legacies_for_user(family.stranger).filter(pk=alone.pk).exists()


def test_the_service_refuses_a_non_member_and_changes_nothing(family, family_facts):
    before = _state()
    with pytest.raises(NotFound):
        services.membership_leave(legacy=family.legacy, user=family.stranger)
    assert _state() == before


@pytest.mark.django_db(transaction=True)
def test_the_last_two_members_leaving_at_once_leave_one_behind(family, monkeypatch):
    # Slow down the step between reading the family and writing, so that without the row lock
    # both would see the other still there and both would leave.
    heir = services.legacy_heir

    def slow_heir(**kwargs):
        time.sleep(0.3)
        return heir(**kwargs)

    monkeypatch.setattr(services, "legacy_heir", slow_heir)
    barrier = threading.Barrier(2)
    outcomes: dict[str, str] = {}

    def leave(user) -> None:
        try:
            barrier.wait(timeout=10)
            services.membership_leave(legacy=family.legacy, user=user)
            outcomes[user.username] = "left"
        except services.LastMemberCannotLeave:
            outcomes[user.username] = "refused"
        finally:
            connections.close_all()

    threads = [threading.Thread(target=leave, args=(u,)) for u in (family.owner, family.member)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes.values()) == ["left", "refused"]
    remaining = list(LegacyMembership.objects.filter(legacy=family.legacy))
    assert len(remaining) == 1
    assert remaining[0].role == "owner"
    assert Legacy.objects.get(pk=family.legacy.pk).created_by_id == remaining[0].user_id


# --- Sharing while being removed ---------------------------------------------------------------


def _while_held(monkeypatch, name, first, then) -> list[BaseException]:
    """Run `first` in a thread until it has returned from facts.services.`name` (slowed to
    hold its transaction open a while), then `then` in another; the errors of both."""
    inside = threading.Event()
    slowed = getattr(services, name)

    def slow(*args, **kwargs):
        result = slowed(*args, **kwargs)
        inside.set()
        time.sleep(0.4)
        return result

    monkeypatch.setattr(services, name, slow)
    errors: list[BaseException] = []

    def run(work) -> None:
        try:
            work()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(first,))]
    threads[0].start()
    assert inside.wait(timeout=10)
    threads.append(threading.Thread(target=run, args=(then,)))
    threads[1].start()
    for thread in threads:
        thread.join(timeout=30)
    return errors


def _removed_while_sharing(family, monkeypatch, share, hold_after) -> None:
    """The member shares a fact and waits after `hold_after` (a function of facts.services)
    while an owner removes them: inside the sharing transaction, after the fact was written
    (`_record_conflicts`), or before it began, after the author was checked
    (`_require_author`). Without the membership row held in that transaction, the removal
    made their shared facts private before the new one was committed, or the sharing came
    after the removal, and the family kept seeing the fact."""

    def sharing() -> None:
        with contextlib.suppress(NotFound):  # removed first: nothing is shared
            share()

    errors = _while_held(monkeypatch, hold_after, sharing, lambda: services.membership_remove(
        legacy=family.legacy, removed_by=family.owner, username="member"))
    assert errors == []
    assert not LegacyMembership.objects.filter(legacy=family.legacy, user=family.member).exists()
    assert not LegacyFact.objects.filter(user=family.member, visibility="shared").exists()
    assert list(selectors.facts_visible_to(family.owner, family.legacy)) == []


@pytest.mark.django_db(transaction=True)
def test_a_fact_shared_while_its_author_is_removed_ends_private(family, monkeypatch):
    _removed_while_sharing(family, monkeypatch, lambda: services.fact_create(
        legacy=family.legacy, user=family.member, category="hobby",
        content="Rose sang alto in the choir.", visibility="shared"), "_record_conflicts")
    assert LegacyFact.objects.get(user=family.member).visibility == "private"


@pytest.mark.django_db(transaction=True)
def test_a_fact_made_shared_while_its_author_is_removed_ends_private(family, monkeypatch):
    fact = LegacyFactFactory(legacy=family.legacy, user=family.member,
                             content="Rose sang alto in the choir.", visibility="private")
    _removed_while_sharing(family, monkeypatch, lambda: services.fact_set_visibility(
        fact=fact, user=family.member, visibility="shared"), "_require_author")
    fact.refresh_from_db()
    assert fact.visibility == "private"


def test_a_former_member_cannot_share(family):
    fact = LegacyFactFactory(legacy=family.legacy, user=family.member, visibility="private")
    services.membership_leave(legacy=family.legacy, user=family.member)
    with pytest.raises(NotFound):
        services.fact_set_visibility(fact=fact, user=family.member, visibility="shared")
    with pytest.raises(NotFound):
        services.fact_create(legacy=family.legacy, user=family.member, category="hobby",
                             content="Rose kept bees.", visibility="shared")
    assert not LegacyFact.objects.filter(user=family.member, visibility="shared").exists()


@pytest.mark.django_db(transaction=True)
def test_an_edit_and_another_member_s_contradiction_at_once_do_not_deadlock(family, monkeypatch):
    """The member's new fact records a conflict with the owner's fact (its row held by the
    conflict's foreign key at commit) while the owner edits that fact: the edit locked the
    fact's row and then waited for the conflict check, and PostgreSQL aborted one of them."""
    owner_fact = LegacyFactFactory(legacy=family.legacy, user=family.owner, category="milestone",
                                   content="Rose married Henry in 1961.", visibility="shared")
    errors = _while_held(
        monkeypatch, "_record_conflicts",
        lambda: services.fact_create(legacy=family.legacy, user=family.member,
                                     category="milestone", content="Rose married Henry in 1962.",
                                     visibility="shared"),
        lambda: services.fact_update(fact=owner_fact, user=family.owner,
                                     content="Rose married Henry in 1960."),
    )
    assert errors == []
    owner_fact.refresh_from_db()
    assert owner_fact.content == "Rose married Henry in 1960."
    [conflict] = FactConflict.objects.all()
    assert owner_fact.pk in (conflict.fact_a_id, conflict.fact_b_id)


@pytest.mark.django_db(transaction=True)
def test_sharing_while_erasing_one_s_own_data_does_not_deadlock(family, monkeypatch):
    """The sharing held the membership row, and its new fact's foreign keys then waited for
    the user's row, which the erase had locked before waiting for that membership."""
    from memory_site.privacy.services import user_data_erase

    errors = _while_held(
        monkeypatch, "_hold_membership",
        lambda: services.fact_create(legacy=family.legacy, user=family.member, category="hobby",
                                     content="Rose sang alto.", visibility="shared"),
        lambda: user_data_erase(user=family.member),
    )
    assert errors == []
    assert not LegacyFact.objects.filter(user=family.member).exists()
    assert not LegacyMembership.objects.filter(user=family.member).exists()


@pytest.mark.django_db(transaction=True)
def test_a_correction_of_a_shared_fact_while_its_author_is_removed_ends_private(
    family, monkeypatch
):
    """A correction of a shared fact is shared; made while its author is removed, it was
    committed after the removal made their facts private, and stayed shared."""
    shared = LegacyFactFactory(legacy=family.legacy, user=family.member, category="milestone",
                               content="Rose married Henry in 1961.", visibility="shared")
    correction = LegacyFactFactory(legacy=family.legacy, user=family.member,
                                   category="milestone", content="Rose married Henry in 1962.",
                                   visibility="private")
    errors = _while_held(
        monkeypatch, "_current_head",
        lambda: services.fact_supersede(old=shared, new=correction),
        lambda: services.membership_remove(legacy=family.legacy, removed_by=family.owner,
                                           username="member"),
    )
    assert errors == []
    assert not LegacyFact.objects.filter(user=family.member, visibility="shared").exists()
    shared.refresh_from_db()
    assert shared.superseded_by_id == correction.pk
