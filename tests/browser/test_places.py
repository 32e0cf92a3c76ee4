"""Real-browser test of the places page: notes edited in place, a place deleted, the link to
the conversation that mentions it; with --screenshots, saves docs/screenshots/places-page.png."""

import pytest
from playwright.sync_api import expect

from agent_memory import services
from agent_memory.models import Place
from tests.factories import ConversationFactory, LegacyFactory, MessageFactory, UserFactory
from tests.support.browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def places():
    alice = UserFactory(username="alice")
    conversation = ConversationFactory(
        user=alice, legacy=LegacyFactory(name="Rose Whitfield", created_by=alice),
        title="Summers at the lake",
    )
    MessageFactory(conversation=conversation, content="Hello.")
    message = MessageFactory(conversation=conversation,
                             content="We spent every July at the lake cabin.")
    cabin, _ = services.place_add(
        user=alice, place_id="lake-cabin", name="The lake cabin",
        notes="Rose and Henry's summer cabin near Port Clinton", conversation=conversation,
        message=message,
    )
    church, _ = services.place_add(user=alice, place_id="church", name="St. Mary's church",
                                   conversation=conversation)
    return {"cabin": cabin, "church": church, "conversation": conversation, "message": message}


def test_places_notes_delete_and_the_mentioning_conversation(browser, live_server, places,
                                                             save_screenshot):
    page = sign_in(browser, live_server, "alice")
    page.get_by_role("navigation").get_by_role("link", name="My places").click()
    expect(page.get_by_role("heading", name="My places")).to_be_visible()
    cabin = page.locator(f"#place-{places['cabin'].pk}")
    expect(cabin).to_contain_text("Rose and Henry's summer cabin near Port Clinton")
    expect(cabin).to_contain_text("mentioned in 1 conversation")
    save_screenshot(page, "places-page.png")

    cabin.get_by_role("link", name="Edit notes").click()
    cabin.get_by_label("Notes").fill("On Lake Erie, near Port Clinton, Ohio")
    cabin.get_by_role("button", name="Save notes").click()
    expect(cabin).to_contain_text("Notes saved.")
    expect(cabin).to_contain_text("On Lake Erie, near Port Clinton, Ohio")
    assert Place.objects.get(pk=places["cabin"].pk).notes == "On Lake Erie, near Port Clinton, Ohio"

    church = page.locator(f"#place-{places['church'].pk}")
    church.get_by_role("link", name="Delete").click()
    expect(church).to_contain_text("Delete this place?")
    church.get_by_role("button", name="Yes, delete").click()
    expect(page.get_by_text("Deleted the place “St. Mary's church”")).to_be_visible()
    assert not Place.objects.filter(pk=places["church"].pk).exists()

    # The mention links to the transcript at the message that named the place.
    cabin.get_by_role("link", name="Summers at the lake").click()
    sequence = places["message"].sequence
    assert page.url.endswith(f"?from={sequence}&to={sequence + 1}#m-{sequence}")
    expect(page.locator(f"#m-{sequence}")).to_contain_text("every July at the lake cabin")


def test_without_javascript_notes_and_delete_still_work(browser, live_server, places):
    page = sign_in(browser, live_server, "alice", java_script_enabled=False)
    page.goto(f"{live_server.url}/places")
    page.locator(f"#place-{places['cabin'].pk}").get_by_role("link", name="Edit notes").click()
    expect(page.get_by_role("heading", name="Notes on The lake cabin")).to_be_visible()
    page.get_by_label("Notes").fill("By the lake")
    page.get_by_role("button", name="Save notes").click()
    expect(page.locator(".flash")).to_contain_text("Notes on The lake cabin saved.")
    page.locator(f"#place-{places['church'].pk}").get_by_role("link", name="Delete").click()
    page.get_by_role("button", name="Yes, delete").click()
    expect(page.locator(".flash")).to_contain_text("Deleted the place")
    assert list(Place.objects.values_list("notes", flat=True)) == ["By the lake"]
