"""Real-browser tests of my conversations about a legacy: Playwright drives Debian's chromium
against the live server; a user finds a conversation by what was said in it, reads it there,
and deletes another with confirmation, with JavaScript (htmx in place) and without. Saves
docs/screenshots/conversations-page.png and conversation-delete.png with --screenshots."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message
from conversations.services import summarization
from facts.models import LegacyFact
from tests.factories import ConversationFactory, LegacyFactFactory, import_messages
from tests.support.browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAKE_LINES = [
    "Rose loved fishing at the lake cabin every summer.",
    "Rose was a nurse at St. Mary's Hospital in Dayton.",
    "Every Sunday Rose baked rhubarb pie for the neighbours.",
    "Rose's favourite song was Moon River.",
]


@pytest.fixture
def conversations(family):
    """The owner's three conversations about Rose: `lake`, long enough to be summarised and
    archived with facts taken from it, and two short ones; plus a fact added by hand."""
    started = datetime(2026, 2, 14, 10, 0, tzinfo=UTC)
    lake = ConversationFactory(user=family.owner, legacy=family.legacy,
                               title="Summers at the lake")
    import_messages(lake, (
        ("user", f"{LAKE_LINES[(i // 2) % len(LAKE_LINES)]} That was years ago.") if i % 2 == 0
        else ("assistant", "Thank you for telling me. What else do you remember?")
        for i in range(40)
    ))
    summarization.conversation_catch_up(conversation=lake)
    garden = ConversationFactory(user=family.owner, legacy=family.legacy, title="Her garden")
    import_messages(garden, [("user", "Rose grew dahlias in the garden behind the house."),
                             ("assistant", "What colour were they?"),
                             ("user", "Deep red, and she gave them to every neighbour.")])
    kitchen = ConversationFactory(user=family.owner, legacy=family.legacy,
                                  title="Sunday kitchen")
    import_messages(kitchen, [("user", "She baked bread and rhubarb pie on Sundays."),
                              ("assistant", "That sounds lovely.")])
    # Fixed times keep the screenshots the same from one run to the next.
    for days, conversation in enumerate((lake, garden, kitchen)):
        Conversation.objects.filter(pk=conversation.pk).update(
            created_at=started + timedelta(days=days),
            last_message_at=started + timedelta(days=days, minutes=30),
        )
    LegacyFactFactory(legacy=family.legacy, user=family.owner, content="Rose kept bees.")
    assert LegacyFact.objects.filter(source_conversation=lake).count() >= 2
    return {"lake": lake, "garden": garden, "kitchen": kitchen}


def test_search_in_place_then_delete_with_confirmation(browser, live_server, family,
                                                       conversations, save_screenshot):
    lake = conversations["lake"]
    lake_facts = list(LegacyFact.objects.filter(source_conversation=lake)
                      .values_list("content", flat=True))
    page = sign_in(browser, live_server, "owner")

    page.get_by_role("link", name="Chat").click()
    page.get_by_role("link", name="Search or delete my conversations about Rose Whitfield").click()
    expect(page.get_by_role("heading", name="My conversations about Rose Whitfield")).to_be_visible()
    rows = page.locator("li.conversation")
    expect(rows).to_have_count(3)
    expect(rows.locator(".conversation-title")).to_have_text(
        ["Sunday kitchen", "Her garden", "Summers at the lake"]
    )

    # The search swaps the results in place, with the agent's search over what was said.
    page.get_by_label("Search titles and what was said").fill("rhubarb pie")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("status")).to_have_text(
        re.compile(r"2 conversations match “rhubarb pie”\.")
    )
    expect(rows).to_have_count(2)
    expect(rows.locator(".conversation-title")).to_have_text(
        ["Sunday kitchen", "Summers at the lake"]
    )
    assert page.locator("header.topbar").count() == 1
    assert page.url.endswith("/conversations?q=rhubarb%20pie")  # htmx pushed the search
    hits = page.locator(f"#conversation-{lake.pk} ul.hits")
    # The first chunk (messages 0–19), with any message hit whose window overlaps it merged in.
    expect(hits.get_by_role("link", name=re.compile(r"^messages 0–\d+ \(summary\)$"))
           ).to_be_visible()
    # A message hit is the message with its neighbours (docs/agent-side.md, "Retrieval").
    hit = hits.get_by_role("link", name=re.compile(r"^(?:message \d+|messages \d+–\d+)$")).first
    save_screenshot(page, "conversations-page.png")

    # A hit opens the transcript at its place, highlighted.
    first, _, last = hit.inner_text().removeprefix("messages ").removeprefix("message ")\
        .partition("–")
    hit.click()
    expect(page.get_by_role("heading", name="Summers at the lake")).to_be_visible()
    expect(page.locator(f"#m-{first}")).to_have_class(re.compile(r"\bin-range\b"))
    expect(page.locator(f"#m-{last or first}")).to_have_class(re.compile(r"\bin-range\b"))
    expect(page.locator("li.in-range").filter(has_text="rhubarb pie")).not_to_have_count(0)
    page.get_by_role("link", name="My conversations").click()

    # Delete: the confirmation loads in place of the row and says what goes.
    row = page.locator(f"#conversation-{lake.pk}")
    row.get_by_role("link", name="Delete").click()
    expect(row.get_by_role("alert")).to_contain_text("Delete this conversation for good?")
    expect(row.locator(".deletion-preview")).to_contain_text("40 messages")
    expect(row.locator(".deletion-preview")).to_contain_text(
        f"{len(lake_facts)} facts taken from it"
    )
    expect(row.get_by_label("Keep the facts taken from it")).not_to_be_checked()
    assert page.locator("header.topbar").count() == 1
    save_screenshot(page, "conversation-delete.png")
    row.get_by_role("button", name="Delete the conversation").click()

    expect(page.locator(".flash")).to_contain_text("Deleted “Summers at the lake” with 40 messages")
    expect(rows).to_have_count(2)
    expect(page.locator(f"#conversation-{lake.pk}")).to_have_count(0)
    assert not Conversation.objects.filter(pk=lake.pk).exists()
    assert not Message.objects.filter(conversation_id=lake.pk).exists()
    assert not ConversationMemory.objects.filter(conversation_id=lake.pk).exists()
    assert not ConversationChunk.objects.filter(conversation_id=lake.pk).exists()
    assert not LegacyFact.objects.filter(content__in=lake_facts).exists()

    # The facts page no longer shows its facts; the one added by hand stays.
    page.goto(f"{live_server.url}/legacies/{family.legacy.pk}/facts")
    expect(page.locator(".fact-content")).to_have_text(["Rose kept bees."])
    page.context.close()


def test_without_javascript_search_and_delete_keeping_the_facts(browser, live_server, family,
                                                                conversations):
    lake = conversations["lake"]
    lake_facts = set(LegacyFact.objects.filter(source_conversation=lake)
                     .values_list("content", flat=True))
    page = sign_in(browser, live_server, "owner", java_script_enabled=False)
    page.goto(f"{live_server.url}/legacies/{family.legacy.pk}/conversations")

    page.get_by_label("Search titles and what was said").fill("garden")
    page.get_by_role("button", name="Search").click()
    assert page.url.endswith("?q=garden")
    expect(page.locator("li.conversation .conversation-title")).to_have_text(
        [re.compile("^Her garden")]
    )

    page.goto(f"{live_server.url}/legacies/{family.legacy.pk}/conversations")
    page.locator(f"#conversation-{lake.pk}").get_by_role("link", name="Delete").click()
    expect(page.get_by_role("heading", name="Delete a conversation")).to_be_visible()
    page.get_by_label("Keep the facts taken from it").check()
    page.get_by_role("button", name="Delete the conversation").click()

    expect(page.locator(".flash")).to_contain_text(f"{len(lake_facts)} facts taken from it kept.")
    expect(page.locator("li.conversation")).to_have_count(2)
    assert not Conversation.objects.filter(pk=lake.pk).exists()
    kept = LegacyFact.objects.filter(content__in=lake_facts)
    assert set(kept.values_list("content", flat=True)) == lake_facts
    assert set(kept.values_list("source_conversation", flat=True)) == {None}
    page.context.close()
