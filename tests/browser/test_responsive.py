"""Real-browser test of the dashboard on a phone: at 390 px wide no page scrolls sideways, the
nav wraps and a fact row's controls stay on screen."""

import pytest
from playwright.sync_api import expect

from tests.factories import ConversationFactory, LegacyFactFactory, MessageFactory
from tests.support.browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}


def test_pages_fit_a_phone_screen(browser, live_server, family):
    legacy = family.legacy
    LegacyFactFactory(legacy=legacy, user=family.owner, category="hobby",
                      content="Rose grew peonies by the back door and gave them to the neighbours.")
    LegacyFactFactory(legacy=legacy, user=family.owner, category="milestone", visibility="shared",
                      content="Rose married Henry Whitfield in June 1955 at the little church.")
    LegacyFactFactory(legacy=legacy, user=family.member, category="habit", visibility="shared",
                      content="Rose called her sister Margaret every Sunday evening.")
    conversation = ConversationFactory(legacy=legacy, user=family.owner, title="At the lake")
    MessageFactory(conversation=conversation, sequence=0, role="user",
                   content="Rose taught the grandchildren to fish off the dock.")
    MessageFactory(conversation=conversation, sequence=1, role="assistant",
                   content="What else do you remember about the lake house?")

    page = sign_in(browser, live_server, "owner")
    page.set_viewport_size(PHONE)
    pages = {
        "home": "/",
        "facts": f"/legacies/{legacy.pk}/facts",
        "chat": f"/chat?legacy={legacy.pk}",
        "chat-conversation": f"/chat/{conversation.pk}",
    }
    for name, path in pages.items():
        page.goto(f"{live_server.url}{path}")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{name} ({path}) is {width} px wide"
        if name == "facts":
            # Every control of my fact is on screen, not cut off at the right edge.
            row = page.locator("li.fact", has_text="peonies")
            delete = row.get_by_role("link", name="Delete")
            expect(delete).to_be_in_viewport()
            assert delete.bounding_box()["x"] + delete.bounding_box()["width"] <= PHONE["width"]
