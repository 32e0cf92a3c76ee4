"""Real-browser tests of the memories dashboard: Playwright drives Debian's chromium against
the live server. With --screenshots, saves docs/screenshots/memories-page.png and
memory-history.png."""

import re
from datetime import UTC, datetime, timedelta
from itertools import chain, count

import pytest
from playwright.sync_api import expect

from agent_memory import services
from agent_memory.models import AgentMemory, AgentMemoryVersion
from tests.factories import ConversationFactory, LegacyFactory, UserFactory
from tests.support.browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _fix_times_for_screenshots(start: datetime) -> None:
    """Fixed ids and dates, so the committed screenshots stay identical across runs."""
    stamp = start
    for version in AgentMemoryVersion.objects.order_by("memory__created_at", "version_number"):
        stamp += timedelta(days=3)
        AgentMemoryVersion.objects.filter(pk=version.pk).update(created_at=stamp)
        if version.version_number == 1:
            AgentMemory.objects.filter(pk=version.memory_id).update(created_at=stamp)
    AgentMemory.objects.filter(deleted_at__isnull=False).update(deleted_at=stamp)


@pytest.fixture
def memories(monkeypatch):
    """Alice's memories: Rose in three versions, a project, a preference, one deleted."""
    ids = chain(["R0seWhit", "Alb90thB", "Short4ns", "CallAlly", "BobsMem1"],
                (f"Added{n:03d}" for n in count()))
    monkeypatch.setattr(services, "generate_short_id", lambda: next(ids))
    alice = UserFactory(username="alice")
    conversation = ConversationFactory(
        user=alice, legacy=LegacyFactory(name="Rose Whitfield", created_by=alice),
        title="Sunday baking with Grandma",
    )
    rose = services.memory_create(
        user=alice, content="Rose Whitfield is Alice's grandmother", category="person",
        subject="Rose", source_conversation=conversation,
    )
    services.memory_update(
        user=alice, memory=rose,
        content="Rose Whitfield is Alice's grandmother; she taught Alice to bake bread",
    )
    services.memory_update(
        user=alice, memory=rose, source_conversation=conversation,
        content="Rose Whitfield is Alice's grandmother; she taught Alice to bake rye bread "
        "every Sunday",
    )
    album = services.memory_create(
        user=alice, content="Alice is collecting stories for Rose's 90th birthday album",
        category="project", subject="Birthday album",
    )
    short = services.memory_create(
        user=alice, content="Alice prefers short answers with dates written out",
        category="preference",
    )
    ally = services.memory_create(user=alice, content="Alice prefers to be called Ally",
                                  category="preference")
    services.memory_delete(user=alice, memory=ally)
    services.memory_create(user=UserFactory(username="bob"), content="Bob's private memory",
                           category="person")
    _fix_times_for_screenshots(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    return {"alice": alice, "rose": rose, "album": album, "short": short, "ally": ally}


def test_memories_by_category_history_and_delete_in_place(browser, live_server, memories,
                                                          save_screenshot):
    page = sign_in(browser, live_server, "alice")
    page.get_by_role("navigation").get_by_role("link", name="My memories").click()
    expect(page.get_by_role("heading", name="My memories")).to_be_visible()
    headings = page.locator(".memory-group h2").all_inner_texts()
    assert [re.sub(r"\s*\d+$", "", h) for h in headings] == ["Person", "Preference", "Project"]
    rose_card = page.locator(f"#memory-{memories['rose'].pk}")
    expect(rose_card).to_contain_text("Rose")
    expect(rose_card).to_contain_text("rye bread every Sunday")
    expect(rose_card).to_contain_text("version 3")
    expect(page.get_by_text("Bob's private memory")).to_have_count(0)
    deleted = page.locator("details.deleted-memories")
    expect(deleted.locator("summary")).to_have_text("Deleted memories (1)")
    ally = deleted.locator(".memory-content", has_text="Alice prefers to be called Ally")
    expect(ally).not_to_be_visible()
    deleted.locator("summary").click()
    expect(ally).to_be_visible()
    expect(deleted.locator("ol.timeline li")).to_have_count(1)
    save_screenshot(page, "memories-page.png")

    # The version history as a timeline, with what changed highlighted.
    rose_card.get_by_role("link", name="History").click()
    expect(page.get_by_role("heading", name="Rose")).to_be_visible()
    versions = page.locator("ol.timeline > li")
    expect(versions).to_have_count(3)
    expect(versions.nth(0)).to_contain_text("Version 1")
    expect(versions.nth(0)).to_contain_text("From the conversation “Sunday baking with Grandma”")
    expect(versions.nth(1).locator("del")).to_have_text("grandmother")
    expect(versions.nth(1).locator("ins")).to_have_text(
        "grandmother; she taught Alice to bake bread"
    )
    expect(versions.nth(2).locator("del")).to_have_count(0)
    expect(versions.nth(2).locator("ins")).to_have_text(["rye", "every Sunday"])
    expect(versions.nth(2)).to_contain_text("current")
    save_screenshot(page, "memory-history.png")

    # Delete asks first (in place); Cancel puts the card back.
    page.get_by_role("navigation").get_by_role("link", name="My memories").click()
    short_card = page.locator(f"#memory-{memories['short'].pk}")
    short_card.get_by_role("link", name="Delete").click()
    expect(short_card).to_contain_text("Delete this memory?")
    short_card.get_by_role("link", name="Cancel").click()
    expect(short_card.get_by_role("link", name="History")).to_be_visible()
    assert AgentMemory.objects.get(pk=memories["short"].pk).deleted_at is None
    # Confirmed: the card leaves the list and joins the deleted section with its history.
    short_card.get_by_role("link", name="Delete").click()
    short_card.get_by_role("button", name="Yes, delete").click()
    expect(page.get_by_role("status")).to_have_text(
        "Deleted: 'Alice prefers short answers with dates written out'. Its history is kept "
        "under “Deleted memories”."
    )
    expect(page.locator(".memory-group").get_by_text("Alice prefers short answers")).to_have_count(0)
    expect(page.locator("details.deleted-memories summary")).to_have_text("Deleted memories (2)")
    assert AgentMemory.objects.get(pk=memories["short"].pk).deleted_at is not None
    assert page.url == f"{live_server.url}/memories"


def test_without_javascript_memories_read_and_delete_still_work(browser, live_server, memories):
    page = sign_in(browser, live_server, "alice", java_script_enabled=False)
    page.goto(f"{live_server.url}/memories")
    expect(page.get_by_text("Alice is collecting stories for Rose's 90th birthday album")) \
        .to_be_visible()
    page.locator(f"#memory-{memories['album'].pk}").get_by_role("link", name="Delete").click()
    expect(page.get_by_role("heading", name="Delete a memory")).to_be_visible()
    page.get_by_role("button", name="Yes, delete").click()
    expect(page.get_by_role("heading", name="My memories")).to_be_visible()
    expect(page.locator(".flash")).to_contain_text("Deleted: 'Alice is collecting stories")
    assert AgentMemory.objects.get(pk=memories["album"].pk).deleted_at is not None
    page.goto(f"{live_server.url}/memories/{memories['album'].pk}")
    expect(page.locator(".memory-status")).to_contain_text("Deleted")
    expect(page.locator("ol.timeline > li")).to_have_count(1)


def test_another_user_s_memory_is_not_found_in_the_browser(browser, live_server, memories):
    bob_memory = AgentMemory.objects.get(user__username="bob")
    page = sign_in(browser, live_server, "alice")
    response = page.goto(f"{live_server.url}/memories/{bob_memory.pk}")
    assert response.status == 404
    expect(page.get_by_text("Bob's private memory")).to_have_count(0)


def test_add_correct_and_restore_a_memory_in_the_browser(browser, live_server, memories,
                                                         save_screenshot):
    alice = memories["alice"]
    page = sign_in(browser, live_server, "alice")
    page.goto(f"{live_server.url}/memories")
    # Add, in place: the form replaces the button; a subject already held says where to go.
    page.get_by_role("link", name="Add a memory").click()
    form = page.locator("#memory-add")
    form.get_by_label("Category").select_option("person")
    form.get_by_label("Subject").fill("rose")
    form.get_by_label("Content").fill("Rose was a nurse")
    form.get_by_role("button", name="Remember").click()
    expect(form.locator(".conflict")).to_contain_text("“Rose” is already a memory")
    expect(form.get_by_role("link", name="update it instead")).to_have_attribute(
        "href", f"/memories/{memories['rose'].pk}/edit"
    )
    save_screenshot(page, "memory-add.png")
    form.get_by_label("Subject").fill("Margaret")
    form.get_by_label("Content").fill("Margaret is Rose's youngest sister")
    form.get_by_role("button", name="Remember").click()
    expect(page.get_by_role("status")).to_have_text("Remembered: 'Margaret is Rose's youngest sister'.")
    expect(page.get_by_role("link", name="Add a memory")).to_be_visible()
    added = AgentMemory.objects.get(user=alice, subject="Margaret")
    expect(page.locator(f"#memory-{added.pk}")).to_contain_text("Margaret is Rose's youngest sister")

    # Correct in place: a new version, the old text in the history.
    card = page.locator(f"#memory-{added.pk}")
    card.get_by_role("link", name="Edit").click()
    card.get_by_label("Content").fill("Margaret is Rose's youngest sister, born in 1938")
    card.get_by_role("button", name="Save").click()
    expect(card).to_contain_text("born in 1938")
    expect(card).to_contain_text("Updated: version 2")
    assert AgentMemoryVersion.objects.filter(memory=added).count() == 2

    # Restore a deleted memory from its history page, in place (issue 14).
    page.goto(f"{live_server.url}/memories/{memories['ally'].pk}")
    page.get_by_role("button", name="Restore this memory").click()
    expect(page.locator("#memory-history .flash-inline")).to_contain_text("Restored as version 2")
    expect(page.locator(".memory-status")).to_contain_text("Active")
    assert AgentMemory.objects.get(pk=memories["ally"].pk).deleted_at is None


def test_without_javascript_a_memory_is_added_and_edited(browser, live_server, memories):
    page = sign_in(browser, live_server, "alice", java_script_enabled=False)
    page.goto(f"{live_server.url}/memories")
    page.get_by_role("link", name="Add a memory").click()
    page.get_by_label("Category").select_option("context")
    page.get_by_label("Content").fill("Alice lives in Columbus")
    page.get_by_role("button", name="Remember").click()
    expect(page.locator(".flash")).to_contain_text("Remembered: 'Alice lives in Columbus'.")
    added = AgentMemory.objects.get(user=memories["alice"], category="context")
    page.locator(f"#memory-{added.pk}").get_by_role("link", name="Edit").click()
    # Blank after trimming: past the browser's own `required` check, refused by the server.
    page.get_by_label("Content").fill("   ")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".field-error")).to_be_visible()
    page.get_by_label("Content").fill("Alice lives in Dayton")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(f"#memory-{added.pk}")).to_contain_text("Alice lives in Dayton")
