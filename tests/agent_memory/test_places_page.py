"""The places page (seed 001): my places with notes and the conversations that mention each,
notes edited in place, a place deleted; nobody else's."""

import pytest
from django.test import Client

from agent_memory import selectors, services
from agent_memory.models import Place, PlaceMention
from conversations.context import build_context
from tests.factories import ConversationFactory, MessageFactory, UserFactory

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def cabin(alice):
    first = ConversationFactory(user=alice, legacy__created_by=alice, title="Summers at the lake")
    second = ConversationFactory(user=alice, legacy=first.legacy, title="")
    message = MessageFactory(conversation=first, content="We spent every July at the cabin.")
    place, _ = services.place_add(user=alice, place_id="lake-cabin", name="The lake cabin",
                                  notes="Near Port Clinton", conversation=first, message=message)
    services.place_mention_add(user=alice, place=place, conversation=second)
    return place


def _rows():
    return (list(Place.objects.order_by("pk").values()),
            list(PlaceMention.objects.order_by("pk").values()))


def test_the_page_lists_places_with_notes_and_the_conversations_that_mention_them(
    web, alice, cabin
):
    services.place_add(user=UserFactory(username="bob"), place_id="x", name="Bob's garage")
    response = web.get("/places")
    assert response.status_code == 200
    html = response.content.decode()
    assert "The lake cabin" in html and "Near Port Clinton" in html
    assert "mentioned in 2 conversations" in html
    first, second = (m.conversation for m in PlaceMention.objects.filter(place=cabin)
                     .order_by("mentioned_at"))
    sequence = PlaceMention.objects.get(place=cabin, conversation=first).message.sequence
    # The mention with a message links to the transcript at that message.
    assert (f'href="/conversations/{first.pk}?from={sequence}&amp;to={sequence + 1}'
            f'#m-{sequence}">Summers at the lake</a>') in html
    assert f'href="/conversations/{second.pk}">Untitled conversation</a>' in html
    assert "Bob&#x27;s garage" not in html
    assert 'href="/places">My places</a>' in html


def test_without_places_the_page_says_so(web):
    assert "No places yet." in web.get("/places").content.decode()


def test_edit_notes_in_place(web, alice, cabin):
    form = web.get(f"/places/{cabin.pk}/edit", **HTMX)
    assert form.status_code == 200 and "Near Port Clinton</textarea>" in form.content.decode()
    response = web.post(f"/places/{cabin.pk}/edit",
                        {"notes": "On Lake Erie,\nnear Port Clinton, Ohio"}, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert f'id="place-{cabin.pk}"' in html and "Notes saved." in html
    assert Place.objects.get(pk=cabin.pk).notes == "On Lake Erie, near Port Clinton, Ohio"
    # The next context sees the new notes.
    conversation = ConversationFactory(user=alice, legacy__created_by=alice)
    assert "- The lake cabin: On Lake Erie, near Port Clinton, Ohio (mentioned in 2 conversations)" \
        in build_context(conversation=conversation).system_prompt


def test_edit_notes_without_javascript(web, cabin):
    assert web.get(f"/places/{cabin.pk}/edit").status_code == 200
    response = web.post(f"/places/{cabin.pk}/edit", {"notes": ""})
    assert response.status_code == 302 and response["Location"] == f"/places#place-{cabin.pk}"
    assert Place.objects.get(pk=cabin.pk).notes == ""


def test_oversized_notes_are_an_inline_error(web, settings, cabin):
    settings.MEMORY_CONTENT_MAX_CHARS = 20
    before = _rows()
    response = web.post(f"/places/{cabin.pk}/edit", {"notes": "x" * 21})
    assert response.status_code == 400
    assert response.context["form"].errors["notes"] == ["At most 20 characters."]
    assert _rows() == before


def test_delete_a_place_with_confirmation(web, alice, cabin):
    confirm = web.get(f"/places/{cabin.pk}/delete", **HTMX)
    assert confirm.status_code == 200 and "Delete this place?" in confirm.content.decode()
    assert web.get(f"/places/{cabin.pk}/delete").status_code == 200
    response = web.post(f"/places/{cabin.pk}/delete", **HTMX)
    assert response.status_code == 200
    assert "Deleted the place “The lake cabin”" in response.content.decode()
    assert not Place.objects.filter(pk=cabin.pk).exists()
    assert not PlaceMention.objects.filter(place_id=cabin.pk).exists()
    assert selectors.place_for_user(user=alice, place_id="lake-cabin") is None
    conversation = ConversationFactory(user=alice, legacy__created_by=alice)
    assert "PLACES OF INTEREST" not in build_context(conversation=conversation).system_prompt


def test_delete_without_javascript_redirects_to_the_list(web, cabin):
    response = web.post(f"/places/{cabin.pk}/delete")
    assert response.status_code == 302 and response["Location"] == "/places"


def test_someone_elses_place_is_a_404_and_nothing_changes(cabin):
    bob = Client()
    bob.force_login(UserFactory(username="bob"))
    before = _rows()
    for method, url in [("get", f"/places/{cabin.pk}/card"), ("get", f"/places/{cabin.pk}/edit"),
                        ("post", f"/places/{cabin.pk}/edit"),
                        ("get", f"/places/{cabin.pk}/delete"),
                        ("post", f"/places/{cabin.pk}/delete")]:
        assert getattr(bob, method)(url, {"notes": "mine now"}).status_code == 404, url
    assert _rows() == before


def test_the_pages_need_a_sign_in(cabin):
    response = Client().get("/places")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
