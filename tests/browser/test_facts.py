"""Real-browser tests of the facts dashboard: Playwright drives Debian's chromium against the
live server. With --screenshots, saves the README's screenshots into docs/screenshots/."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from conversations.models import Conversation, Message
from facts.models import LegacyFact
from tests.factories import (
    ConversationChunkFactory,
    ConversationFactory,
    ConversationMemoryFactory,
    LegacyFactFactory,
    MessageFactory,
)
from tests.support.browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def story(family):
    """A family with facts worth looking at, and one of the owner's conversations."""
    conversation = ConversationFactory(
        legacy=family.legacy, user=family.owner, title="Remembering the garden"
    )
    lines = [
        ("user", "Grandma Rose spent every spring morning in the garden."),
        ("assistant", "What did she grow there?"),
        ("user", "Dahlias, mostly. She won the county show with them three years running."),
        ("assistant", "That sounds like a real passion. Did she teach anyone?"),
        ("user", "She taught me to divide the tubers every autumn."),
        ("assistant", "Thank you for sharing that memory."),
    ]
    for sequence, (role, content) in enumerate(lines):
        MessageFactory(conversation=conversation, sequence=sequence, role=role, content=content)
    # Fixed times keep the committed screenshots identical from one run to the next.
    started = datetime(2026, 2, 14, 10, 0, tzinfo=UTC)
    Conversation.objects.filter(pk=conversation.pk).update(created_at=started)
    for message in conversation.messages.all():
        Message.objects.filter(pk=message.pk).update(
            created_at=started + timedelta(minutes=message.sequence)
        )
    ConversationMemoryFactory(
        conversation=conversation, start_sequence=0, end_sequence=5, status="completed",
        memory_text="The user remembered Rose's garden: prize-winning dahlias at the county "
        "show, and how she taught them to divide the tubers each autumn.",
    )
    ConversationChunkFactory(
        conversation=conversation, user=family.owner, legacy=family.legacy,
        content="Rose's spring mornings in the garden; her dahlias won the county show three "
        "years running.",
        embedding=[0.01] * 1024, message_range_start=0, message_range_end=4,
    )
    owner, member, legacy = family.owner, family.member, family.legacy
    facts = {
        "dahlias": LegacyFactFactory(
            legacy=legacy, user=owner, category="hobby",
            content="Rose won the county show with her dahlias three years running.",
            source_conversation=conversation, source_range_start=0, source_range_end=4,
        ),
        "piano": LegacyFactFactory(
            legacy=legacy, user=owner, category="occupation",
            content="Rose taught piano to half the children on Elm Street.", visibility="shared",
        ),
        "crossword": LegacyFactFactory(
            legacy=legacy, user=owner, category="habit",
            content="Rose did the crossword in ink every Sunday.",
        ),
        "married": LegacyFactFactory(
            legacy=legacy, user=owner, category="milestone",
            content="Rose married Henry Whitfield in June 1962.", visibility="shared",
        ),
        "sister": LegacyFactFactory(
            legacy=legacy, user=member, category="relationship",
            content="Rose called her sister Margaret every Sunday evening.", visibility="shared",
        ),
        "member_private": LegacyFactFactory(
            legacy=legacy, user=member, category="preference",
            content="Rose took her tea with honey, never sugar.",
        ),
    }
    return facts


def test_review_share_edit_delete_and_follow_a_fact_to_its_transcript(
    browser, live_server, family, story, save_screenshot
):
    owner = sign_in(browser, live_server, "owner")
    owner.get_by_role("link", name="Rose Whitfield", exact=True).click()
    expect(owner.get_by_role("heading", name="What the family remembers about Rose Whitfield"))\
        .to_be_visible()
    others = owner.locator("section.others")
    expect(others.get_by_text("Rose called her sister Margaret every Sunday evening.")).to_be_visible()
    expect(others.locator(".author")).to_have_text(["member"])
    expect(owner.get_by_text("Rose took her tea with honey")).to_have_count(0)

    # Share a private fact: the row switches in place, with a confirmation.
    dahlias = owner.locator(f"#fact-{story['dahlias'].pk}")
    url_before = owner.url
    dahlias.get_by_role("switch").click()
    expect(dahlias.get_by_role("status")).to_have_text("Shared with the family.")
    expect(dahlias.get_by_role("switch")).to_have_attribute("aria-checked", "true")
    assert owner.url == url_before
    assert LegacyFact.objects.get(pk=story["dahlias"].pk).visibility == "shared"

    # The second member sees it from their own session.
    member = sign_in(browser, live_server, "member")
    member.goto(f"{live_server.url}/legacies/{family.legacy.pk}/facts")
    shared_row = member.locator(f"#fact-{story['dahlias'].pk}")
    expect(shared_row).to_contain_text("Rose won the county show")
    expect(shared_row.locator(".author")).to_have_text("owner")
    expect(shared_row.get_by_role("switch")).to_have_count(0)

    # The member follows it to its source: only the owner's message it was taken from, not
    # the agent's replies nor the rest of the conversation, which stay the owner's.
    shared_row.get_by_role("link", name="from one of their conversations, messages 0–3").click()
    expect(member).to_have_url(f"{live_server.url}/facts/{story['dahlias'].pk}/source")
    expect(member.get_by_role("heading", name="Where this fact came from")).to_be_visible()
    expect(member.locator(".fact-content")).to_have_text(
        "Rose won the county show with her dahlias three years running."
    )
    expect(member.locator("li.msg")).to_have_count(1)
    expect(member.locator("li.msg")).to_contain_text(
        "Dahlias, mostly. She won the county show with them three years running."
    )
    expect(member.get_by_text("every spring morning in the garden")).to_have_count(0)
    expect(member.get_by_text("What did she grow there?")).to_have_count(0)
    expect(member.get_by_text("Thank you for sharing that memory.")).to_have_count(0)
    expect(member.get_by_text("Remembering the garden")).to_have_count(0)
    expect(member.get_by_role("link", name="Open the whole conversation")).to_have_count(0)

    # Edit one in place.
    crossword = owner.locator(f"#fact-{story['crossword'].pk}")
    crossword.get_by_role("link", name="Edit").click()
    editor = owner.locator(f"#fact-{story['crossword'].pk}")
    editor.get_by_label("Fact").fill("Rose did the Sunday crossword in ink, always in pen.")
    editor.get_by_role("button", name="Save").click()
    expect(editor.get_by_role("status")).to_have_text("Saved.")
    expect(editor.locator(".fact-content")).to_have_text(
        "Rose did the Sunday crossword in ink, always in pen."
    )
    assert LegacyFact.objects.get(pk=story["crossword"].pk).content == (
        "Rose did the Sunday crossword in ink, always in pen."
    )

    # An invalid edit shows the error in place and changes nothing.
    editor.get_by_role("link", name="Edit").click()
    editor.get_by_label("Fact").fill("no")
    editor.get_by_role("button", name="Save").click()
    expect(editor.get_by_role("alert")).to_have_text("Must be 3–500 characters.")
    editor.get_by_role("link", name="Cancel").click()
    expect(editor.locator(".fact-content")).to_have_text(
        "Rose did the Sunday crossword in ink, always in pen."
    )

    owner.reload()
    save_screenshot(owner, "facts-page.png")

    # Delete one, after a confirmation.
    married = owner.locator(f"#fact-{story['married'].pk}")
    married.get_by_role("link", name="Delete").click()
    expect(married.get_by_role("alert")).to_contain_text("Delete this fact?")
    assert LegacyFact.objects.filter(pk=story["married"].pk).exists()
    married.get_by_role("button", name="Yes, delete").click()
    expect(owner.get_by_text("Fact deleted.")).to_be_visible()
    assert not LegacyFact.objects.filter(pk=story["married"].pk).exists()

    # The text filter narrows the list in place.
    owner.get_by_label("Contains").fill("piano")
    expect(owner.locator("#fact-list li.fact")).to_have_count(1)
    expect(owner.locator("#fact-list")).to_contain_text("Rose taught piano")
    assert "q=piano" in owner.url
    owner.get_by_label("Contains").fill("")
    expect(owner.locator("#fact-list li.fact")).to_have_count(4)

    # Follow a fact to where it came from.
    owner.locator(f"#fact-{story['dahlias'].pk}").get_by_role("link", name=re.compile("from")).click()
    expect(owner).to_have_url(re.compile(r"/conversations/[0-9a-f-]+\?from=0&to=4#m-0$"))
    expect(owner.get_by_role("heading", name="Remembering the garden")).to_be_visible()
    expect(owner.locator("li.msg.in-range")).to_have_count(4)
    expect(owner.locator("#m-2")).to_have_class(re.compile(r"\bin-range\b"))
    expect(owner.locator("#m-4")).not_to_have_class(re.compile(r"\bin-range\b"))
    save_screenshot(owner, "transcript-page.png")

    # Only the conversation's own user may read it.
    member.goto(owner.url)
    expect(member.get_by_text("Rose won the county show")).to_have_count(0)


def test_without_javascript_facts_read_and_forms_still_work(browser, live_server, family, story):
    page = sign_in(browser, live_server, "owner", java_script_enabled=False)
    page.get_by_role("link", name="Rose Whitfield", exact=True).click()
    expect(page.get_by_text("Rose did the crossword in ink every Sunday.")).to_be_visible()
    crossword = page.locator(f"#fact-{story['crossword'].pk}")
    crossword.get_by_role("switch").click()
    expect(page.locator(".flash")).to_contain_text("Shared with the family.")
    assert LegacyFact.objects.get(pk=story["crossword"].pk).visibility == "shared"

    page.locator(f"#fact-{story['piano'].pk}").get_by_role("link", name="Delete").click()
    expect(page.get_by_role("heading", name="Delete a fact")).to_be_visible()
    page.get_by_role("button", name="Yes, delete").click()
    expect(page.locator(".flash")).to_contain_text("Fact deleted.")
    assert not LegacyFact.objects.filter(pk=story["piano"].pk).exists()
