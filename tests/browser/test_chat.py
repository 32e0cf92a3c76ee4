"""Real-browser test of the chat page: Playwright drives Debian's chromium against the live
server, a new user picks a legacy, talks, and sees the context beside each reply. Saves
docs/screenshots/chat-page.png when pytest runs with --screenshots."""

import pytest
from playwright.sync_api import expect

from agent_memory.models import AgentMemory
from conversations.models import Message
from tests.factories import ConversationFactory, LegacyFactFactory
from tests.support.chunks import chunk_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

def test_a_new_user_talks_and_sees_the_context_beside_the_reply(browser, live_server, family,
                                                                 save_screenshot):
    earlier = ConversationFactory(user=family.owner, legacy=family.legacy, title="Summer 1972")
    chunk_for(earlier, 0, 20, "Rose taught the grandchildren to fish off the dock at the lake "
                              "house, and always packed rhubarb pie.")
    LegacyFactFactory(legacy=family.legacy, user=family.owner, category="hobby",
                      content="Rose loved fishing at the lake.")
    LegacyFactFactory(legacy=family.legacy, user=family.member, category="occupation",
                      content="Rose was a nurse for thirty years.", visibility="shared")

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("owner")
    page.get_by_label("Password").fill("pw-for-tests")
    page.get_by_role("button", name="Sign in").click()

    page.get_by_role("link", name="Chat").click()
    page.get_by_label("Who do you want to talk about?").select_option(label="Rose Whitfield")
    page.get_by_role("button", name="Choose").click()
    page.get_by_label("Title (optional)").fill("At the lake")
    page.get_by_role("button", name="Start a new conversation").click()
    expect(page.get_by_role("heading", name="At the lake")).to_be_visible()

    # An empty message is an error shown in place (htmx swaps only 2xx answers).
    page.get_by_label("Your message").fill("   ")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("alert")).to_have_text("A message needs some content.")
    assert Message.objects.filter(conversation__title="At the lake").count() == 0

    page.get_by_label("Your message").fill("Remember that my sister Anna always brought the boat.")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".chat-message.assistant")).to_contain_text("Noted — I'll remember that")
    # The panel shows the context this reply was given: the memory is stored, not yet in it.
    expect(page.get_by_role("heading", name="Context used for the last reply")).to_be_visible()
    expect(page.locator("#context-memories")).to_contain_text("No memories yet.")
    assert AgentMemory.objects.filter(user=family.owner).count() == 1

    page.get_by_label("Your message").fill("Tell me about fishing at the lake house.")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".chat-message.assistant").nth(1)).to_contain_text("Offline mode")
    expect(page.locator("#context-memories")).to_contain_text("My sister Anna always brought the boat")
    expect(page.locator("#context-retrieved")).to_contain_text("fish off the dock")
    expect(page.locator("#context-facts")).to_contain_text("Rose was a nurse for thirty years.")
    expect(page.locator("#context-facts")).to_contain_text("(shared)")
    expect(page.locator('tr[data-part="retrieved"] .token-bar')).to_be_visible()
    assert page.locator('tr[data-part="facts"] td.num').inner_text() != "0"
    # htmx swapped the fragment in place: one page, no full reload.
    assert page.locator("header.topbar").count() == 1
    assert Message.objects.filter(conversation__title="At the lake").count() == 5

    save_screenshot(page, "chat-page.png")

    # /memory is answered in place, straight from the memories: no message, no agent.
    page.get_by_label("Your message").fill("/memory")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#chat-command-reply")).to_contain_text("Your memories:")
    expect(page.locator("#chat-command-reply")).to_contain_text(
        "My sister Anna always brought the boat"
    )
    assert page.locator("header.topbar").count() == 1
    assert Message.objects.filter(conversation__title="At the lake").count() == 5
    context.close()
