"""Real-browser tests of creating a legacy, of the family on the legacy page and of leaving it:
Playwright drives Debian's chromium against the live server. With --screenshots, saves
docs/screenshots/family-page.png."""

from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from facts.models import Legacy, LegacyFact, LegacyMembership
from tests.factories import LegacyFactFactory, MembershipFactory, UserFactory
from tests.support.browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def household(family):
    """The family of three, joined on fixed dates (the screenshot stays the same from one run
    to the next), and the member's facts: one shared, one private."""
    cousin = UserFactory(username="cousin")
    MembershipFactory(legacy=family.legacy, user=cousin)
    for user, joined in [
        (family.owner, datetime(2025, 3, 1, 9, 0, tzinfo=UTC)),
        (family.member, datetime(2025, 4, 2, 9, 0, tzinfo=UTC)),
        (cousin, datetime(2025, 11, 20, 9, 0, tzinfo=UTC)),
    ]:
        LegacyMembership.objects.filter(legacy=family.legacy, user=user).update(joined_at=joined)
    shared = LegacyFactFactory(
        legacy=family.legacy, user=family.member, category="relationship",
        content="Rose called her sister Margaret every Sunday evening.", visibility="shared",
    )
    LegacyFactFactory(
        legacy=family.legacy, user=family.member, category="preference",
        content="Rose took her tea with honey, never sugar.",
    )
    return {"cousin": cousin, "shared": shared}


def test_a_member_sees_the_family_and_leaves_it(
    browser, live_server, family, household, save_screenshot
):
    member = sign_in(browser, live_server, "member")
    member.get_by_role("link", name="Rose Whitfield's family →").click()
    expect(member).to_have_url(f"{live_server.url}/legacies/{family.legacy.pk}")
    expect(member.get_by_role("heading", name="Rose Whitfield", exact=True)).to_be_visible()
    rows = member.locator("table.members tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("owner")
    expect(rows.nth(0)).to_contain_text("Owner")
    expect(rows.nth(0)).to_contain_text("1 March 2025")
    expect(rows.nth(1)).to_contain_text("member")
    expect(rows.nth(1)).to_contain_text("you")
    expect(rows.nth(2)).to_contain_text("cousin")
    expect(rows.nth(2)).to_contain_text("20 November 2025")
    save_screenshot(member, "family-page.png")

    # The cousin sees the member's shared fact before the member leaves.
    cousin = sign_in(browser, live_server, "cousin")
    cousin.goto(f"{live_server.url}/legacies/{family.legacy.pk}/facts")
    expect(cousin.get_by_text("Rose called her sister Margaret every Sunday evening.")).to_be_visible()

    member.get_by_role("link", name="Leave this family…").click()
    expect(member.get_by_role("heading", name="Leave Rose Whitfield's family")).to_be_visible()
    expect(member.get_by_text("Your 1 shared fact about Rose Whitfield becomes private")).to_be_visible()
    # Without the box ticked the browser does not send the form.
    member.get_by_role("button", name="Leave Rose Whitfield").click()
    expect(member.get_by_role("heading", name="Leave Rose Whitfield's family")).to_be_visible()
    assert LegacyMembership.objects.filter(legacy=family.legacy, user=family.member).exists()

    member.get_by_label("I understand what happens when I leave.").check()
    member.get_by_role("button", name="Leave Rose Whitfield").click()
    expect(member.get_by_role("heading", name="My legacies")).to_be_visible()
    expect(member.locator(".flash")).to_have_text(
        "You have left the family of Rose Whitfield. Your 1 shared fact is now private."
    )
    expect(member.get_by_text("You don't belong to any legacy yet.")).to_be_visible()
    assert LegacyFact.objects.get(pk=household["shared"].pk).visibility == "private"

    # The family no longer sees the fact, nor the member.
    cousin.reload()
    expect(cousin.get_by_text("Rose called her sister Margaret")).to_have_count(0)
    cousin.goto(f"{live_server.url}/legacies/{family.legacy.pk}")
    expect(cousin.locator("table.members tbody tr")).to_have_count(2)
    expect(cousin.locator("#member-member")).to_have_count(0)

    # And the member no longer reaches the legacy.
    response = member.goto(f"{live_server.url}/legacies/{family.legacy.pk}")
    assert response.status == 404


def test_without_javascript_the_owner_leaves_and_the_last_member_is_told_why_not(
    browser, live_server, family, household
):
    owner = sign_in(browser, live_server, "owner", java_script_enabled=False)
    owner.get_by_role("link", name="Rose Whitfield's family →").click()
    owner.get_by_role("link", name="Leave this family…").click()
    expect(owner.get_by_text("member, the longest-standing member, becomes its owner")).to_be_visible()
    owner.get_by_label("I understand what happens when I leave.").check()
    owner.get_by_role("button", name="Leave Rose Whitfield").click()
    expect(owner.locator(".flash")).to_have_text(
        "You have left the family of Rose Whitfield. member is its owner now."
    )
    assert LegacyMembership.objects.get(legacy=family.legacy, user=family.member).role == "owner"

    # Alone in a legacy, the leave page explains and offers no button.
    alone = sign_in(browser, live_server, "other", java_script_enabled=False)
    alone.get_by_role("link", name="Walter Brandt's family →").click()
    alone.get_by_role("link", name="Leave this family…").click()
    expect(alone.get_by_role("alert")).to_contain_text(
        "You are the only member of Walter Brandt, so you cannot leave it"
    )
    expect(alone.get_by_role("button", name="Leave Walter Brandt")).to_have_count(0)


@pytest.mark.parametrize("javascript", [True, False], ids=["javascript", "no-javascript"])
def test_a_newcomer_creates_a_legacy_and_becomes_its_owner(browser, live_server, javascript):
    UserFactory(username="newcomer")
    page = sign_in(browser, live_server, "newcomer", java_script_enabled=javascript)
    expect(page.locator(".empty")).to_contain_text("Create one below for the person you remember")
    expect(page.locator(".empty")).to_contain_text("invite you by your username, newcomer")

    # Blank is refused by the server's rule (the browser only knows "not empty"), inline.
    name = page.get_by_label("Name of the person you remember")
    name.fill("   ")
    page.get_by_role("button", name="Create legacy").click()
    expect(page.get_by_role("alert")).to_have_text("A legacy needs a name.")
    assert not Legacy.objects.exists()

    name.fill("Grandpa Joe")
    page.get_by_role("button", name="Create legacy").click()
    legacy = Legacy.objects.get()
    expect(page).to_have_url(f"{live_server.url}/legacies/{legacy.pk}")
    expect(page.locator(".flash")).to_have_text(
        "You have created the legacy of Grandpa Joe and are its owner. "
        "Invite the family below by their usernames."
    )
    expect(page.locator("#member-newcomer")).to_contain_text("Owner")
    expect(page.get_by_role("button", name="Send invitation")).to_be_visible()

    page.get_by_role("link", name="My legacies").first.click()
    expect(page.get_by_role("link", name="Grandpa Joe", exact=True)).to_be_visible()
    expect(page.get_by_text("You are an owner · 1 member")).to_be_visible()
    expect(page.get_by_role("heading", name="Create a legacy")).to_be_visible()
