"""Real-browser tests of families by consent: an owner invites on the legacy page, the invitee
accepts on the invitations page (htmx in place, and without JavaScript). With --screenshots,
saves docs/screenshots/invitations-page.png."""

import pytest
from playwright.sync_api import expect

from facts.models import LegacyInvitation, LegacyMembership
from tests.factories import InvitationFactory, UserFactory
from tests.support.browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_owner_invites_and_the_invitee_accepts_in_the_dashboard(
    browser, live_server, family, save_screenshot
):
    cousin = UserFactory(username="cousin")
    # A second invitation, from another family, stays on the page after the first is answered.
    InvitationFactory(legacy=family.other_legacy, invited_user=cousin, invited_by=family.other_member)

    owner = sign_in(browser, live_server, "owner")
    owner.get_by_role("link", name="Rose Whitfield's family →").click()
    owner.get_by_label("Username").fill("cousin")
    owner.get_by_role("button", name="Send invitation").click()
    expect(owner.locator(".flash")).to_have_text(
        "If cousin has an account, they can now accept or decline the invitation to "
        "Rose Whitfield's family."
    )
    expect(owner.locator("#pending-cousin")).to_contain_text("as member, invited by owner")
    assert not LegacyMembership.objects.filter(user=cousin, legacy=family.legacy).exists()

    invitee = sign_in(browser, live_server, "cousin")
    invitee.get_by_role("link", name="Invitations (2)").click()
    expect(invitee.get_by_role("heading", name="Invitations")).to_be_visible()
    rows = invitee.locator("li.invitation")
    expect(rows).to_have_count(2)
    rose = rows.filter(has_text="Rose Whitfield")
    expect(rose).to_contain_text("owner invites you to the family of Rose Whitfield as member.")
    save_screenshot(invitee, "invitations-page.png")

    rose.get_by_role("button", name="Accept").click()
    expect(invitee.get_by_text("You have joined the family of Rose Whitfield.")).to_be_visible()
    expect(invitee.get_by_role("link", name="Invitations (1)")).to_be_visible()
    expect(invitee).to_have_url(f"{live_server.url}/invitations")
    assert LegacyMembership.objects.get(user=cousin, legacy=family.legacy).role == "member"

    invitee.get_by_role("link", name="Go to Rose Whitfield →").click()
    expect(invitee.locator("#member-cousin")).to_contain_text("you")
    # A member sees no invite form.
    expect(invitee.get_by_role("button", name="Send invitation")).to_have_count(0)

    owner.reload()
    expect(owner.locator("#member-cousin")).to_be_visible()
    expect(owner.locator("#pending-cousin")).to_have_count(0)


def test_without_javascript_the_invitee_declines_and_accepts(browser, live_server, family):
    cousin = UserFactory(username="cousin")
    InvitationFactory(legacy=family.legacy, invited_user=cousin, invited_by=family.owner)
    InvitationFactory(legacy=family.other_legacy, invited_user=cousin, invited_by=family.other_member)

    invitee = sign_in(browser, live_server, "cousin", java_script_enabled=False)
    invitee.get_by_role("link", name="Invitations (2)").click()
    invitee.locator("li.invitation", has_text="Walter Brandt").get_by_role(
        "button", name="Decline"
    ).click()
    expect(invitee.locator(".flash")).to_have_text(
        "You have declined the invitation to Walter Brandt's family."
    )
    expect(invitee.get_by_role("link", name="Invitations (1)")).to_be_visible()
    invitee.get_by_role("button", name="Accept").click()
    expect(invitee.get_by_role("heading", name="Rose Whitfield", exact=True)).to_be_visible()
    expect(invitee.locator(".flash")).to_have_text("You have joined the family of Rose Whitfield.")
    expect(invitee.get_by_role("link", name="Invitations (0)")).to_be_visible()
    assert set(LegacyInvitation.objects.values_list("status", flat=True)) == {
        "accepted", "declined",
    }
