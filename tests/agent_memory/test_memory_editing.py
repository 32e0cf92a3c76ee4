"""Adding, correcting and restoring memories on the dashboard, with the API's rules."""

import pytest
from django.test import Client

from agent_memory import selectors, services
from agent_memory.models import AgentMemory, AgentMemoryVersion
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def sarah(alice):
    return services.memory_create(user=alice, content="Sarah works on the Platform team",
                                  category="person", subject="Sarah")


def _rows():
    return (list(AgentMemory.objects.order_by("pk").values()),
            list(AgentMemoryVersion.objects.order_by("pk").values()))


# --- Add -------------------------------------------------------------------------------------


def test_the_list_offers_to_add_a_memory(web):
    html = web.get("/memories").content.decode()
    assert 'href="/memories/add"' in html and 'hx-get="/memories/add"' in html


def test_add_a_memory_without_javascript(web, alice):
    assert web.get("/memories/add").status_code == 200
    response = web.post("/memories/add", {"category": "preference", "subject": "",
                                          "content": "Alice likes short answers"})
    memory = AgentMemory.objects.get(user=alice)
    assert response.status_code == 302
    assert response["Location"] == f"/memories#memory-{memory.pk}"
    assert (memory.category, memory.subject) == ("preference", None)
    assert selectors.memory_for_user(user=alice, memory_id=memory.pk).content == (
        "Alice likes short answers"
    )
    assert "Remembered: &#x27;Alice likes short answers&#x27;." in web.get("/memories").content.decode()


def test_add_with_htmx_updates_the_sections_in_place(web, alice):
    form = web.get("/memories/add", **HTMX)
    assert form.status_code == 200
    assert 'id="memory-add"' in form.content.decode() and "<html" not in form.content.decode()
    response = web.post("/memories/add", {"category": "context", "content": "Lives in Ohio"},
                        **HTMX)
    memory = AgentMemory.objects.get(user=alice)
    assert response.status_code == 200
    html = response.content.decode()
    # The add button in the form's place; the sections, with the new card, out of band.
    assert html.index('id="memory-add"') < html.index('<div id="memory-sections" hx-swap-oob="true">')
    assert f'id="memory-{memory.pk}"' in html and "Remembered: &#x27;Lives in Ohio&#x27;." in html


def test_a_subject_already_held_is_a_409_with_a_link_to_update_it(web, alice, sarah):
    before = _rows()
    response = web.post("/memories/add", {"category": "person", "subject": "sarah",
                                          "content": "Sarah moved to Design"})
    assert response.status_code == 409
    html = response.content.decode()
    assert "You already have a memory about this subject." in html
    assert f'href="/memories/{sarah.pk}/edit"' in html
    assert _rows() == before
    # htmx swaps only 2xx answers: the same form and link come back as 200.
    again = web.post("/memories/add", {"category": "person", "subject": "Sarah",
                                       "content": "Sarah moved"}, **HTMX)
    assert again.status_code == 200 and f'href="/memories/{sarah.pk}/edit"' in again.content.decode()
    assert _rows() == before


@pytest.mark.parametrize("data, field", [
    ({"category": "person", "content": ""}, "content"),
    ({"category": "nonsense", "content": "x"}, "category"),
    ({"category": "person", "content": "x" * 2001}, "content"),
    ({"category": "person", "subject": "s" * 300, "content": "x"}, "subject"),
])
def test_bad_input_is_an_inline_error_and_nothing_is_written(web, settings, data, field):
    before = _rows()
    response = web.post("/memories/add", data)
    assert response.status_code == 400
    assert field in response.context["form"].errors
    assert 'class="error field-error"' in response.content.decode()
    assert _rows() == before


# --- Edit ------------------------------------------------------------------------------------


def test_edit_in_place_adds_a_version(web, alice, sarah):
    form = web.get(f"/memories/{sarah.pk}/edit", **HTMX)
    assert form.status_code == 200
    assert "Sarah works on the Platform team</textarea>" in form.content.decode()
    response = web.post(f"/memories/{sarah.pk}/edit", {"content": "Sarah works on the Design team"},
                        **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert f'id="memory-{sarah.pk}"' in html and "Sarah works on the Design team" in html
    assert "Updated: version 2" in html
    assert [v.content for v in AgentMemoryVersion.objects.filter(memory=sarah)
            .order_by("version_number")] == [
        "Sarah works on the Platform team", "Sarah works on the Design team",
    ]


def test_edit_without_javascript_redirects_to_the_memory(web, sarah):
    assert web.get(f"/memories/{sarah.pk}/edit").status_code == 200
    response = web.post(f"/memories/{sarah.pk}/edit", {"content": "Sarah leads Design"})
    assert response.status_code == 302 and response["Location"] == f"/memories#memory-{sarah.pk}"


def test_an_empty_edit_is_an_inline_error(web, sarah):
    before = _rows()
    response = web.post(f"/memories/{sarah.pk}/edit", {"content": "  "})
    assert response.status_code == 400
    assert "content" in response.context["form"].errors
    assert _rows() == before


def test_someone_elses_memory_cannot_be_edited_or_restored(sarah):
    bob = Client()
    bob.force_login(UserFactory(username="bob"))
    services.memory_delete(user=sarah.user, memory=sarah)
    before = _rows()
    for method, url in [("get", f"/memories/{sarah.pk}/edit"),
                        ("post", f"/memories/{sarah.pk}/edit"),
                        ("post", f"/memories/{sarah.pk}/restore")]:
        response = getattr(bob, method)(url, {"content": "hijacked"})
        assert response.status_code == 404, url
    assert _rows() == before


def test_a_deleted_memory_cannot_be_edited(web, alice, sarah):
    services.memory_delete(user=alice, memory=sarah)
    assert web.get(f"/memories/{sarah.pk}/edit").status_code == 404


# --- Restore ---------------------------------------------------------------------------------


def test_restore_a_deleted_memory_as_a_new_version(web, alice, sarah):
    services.memory_update(user=alice, memory=sarah, content="Sarah works on the Design team")
    services.memory_delete(user=alice, memory=sarah)
    history = web.get(f"/memories/{sarah.pk}").content.decode()
    assert "Restore this memory" in history and "Restore this version" in history

    response = web.post(f"/memories/{sarah.pk}/restore")
    assert response.status_code == 302 and response["Location"] == f"/memories/{sarah.pk}"
    memory = selectors.memory_for_user(user=alice, memory_id=sarah.pk)
    assert memory.deleted_at is None and memory.evicted_at is None
    assert [v.content for v in memory.versions.all()] == [
        "Sarah works on the Platform team", "Sarah works on the Design team",
        "Sarah works on the Design team",
    ]
    assert sarah.pk in [m.pk for m in selectors.active_memories_for_user(alice)]
    assert "Restored as version 3" in web.get(f"/memories/{sarah.pk}").content.decode()


def test_restore_an_earlier_version(web, alice, sarah):
    services.memory_update(user=alice, memory=sarah, content="Sarah works on the Design team")
    services.memory_delete(user=alice, memory=sarah)
    web.post(f"/memories/{sarah.pk}/restore", {"version": "1"})
    memory = selectors.memory_for_user(user=alice, memory_id=sarah.pk)
    assert memory.version == 3 and memory.content == "Sarah works on the Platform team"


def test_restore_refuses_an_active_memorys_current_text_or_a_missing_version(web, alice, sarah):
    # An active memory can go back to an earlier version (issue 14's revert), never to the
    # text it already has: a 400 that says so, nothing written.
    before = _rows()
    response = web.post(f"/memories/{sarah.pk}/restore")
    assert response.status_code == 400
    assert "Choose an earlier version: this is the current text." in response.content.decode()
    assert web.post(f"/memories/{sarah.pk}/restore", {"version": "1"}).status_code == 400
    assert _rows() == before
    services.memory_delete(user=alice, memory=sarah)
    before = _rows()
    assert web.post(f"/memories/{sarah.pk}/restore", {"version": "7"}).status_code == 404
    assert _rows() == before


def test_restore_when_the_subject_is_held_again_is_a_409(web, alice, sarah):
    services.memory_delete(user=alice, memory=sarah)
    newer = services.memory_create(user=alice, content="Sarah is my sister-in-law",
                                   category="person", subject="Sarah")
    before = _rows()
    response = web.post(f"/memories/{sarah.pk}/restore")
    assert response.status_code == 409
    assert f'href="/memories/{newer.pk}/edit"' in response.content.decode()
    assert _rows() == before


@pytest.mark.parametrize("version", ["abc", "-1", "0"])
def test_restore_with_a_malformed_version_is_a_400(web, alice, sarah, version):
    services.memory_delete(user=alice, memory=sarah)
    before = _rows()
    response = web.post(f"/memories/{sarah.pk}/restore", {"version": version})
    assert response.status_code == 400
    assert "That is not a version of this memory." in response.content.decode()
    assert _rows() == before


def test_a_memory_from_a_conversation_deleted_meanwhile_is_not_found_and_writes_nothing(family):
    """The API read the conversation, then its DELETE committed: the write finds it gone (a
    404) under the user's lock, where its version named it and failed at commit (a 500)."""
    from conversations.models import Conversation
    from memory_site.core.errors import NotFound
    from tests.factories import ConversationFactory

    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    Conversation.objects.filter(pk=conversation.pk).delete()
    with pytest.raises(NotFound):
        services.memory_create(user=family.owner, content="Alec is the user's boss.",
                               category="person", source_conversation=conversation)
    assert not AgentMemory.objects.exists() and not AgentMemoryVersion.objects.exists()
