"""The memory dashboard pages: the list by category, history with diffs, delete, tenancy."""

import pytest
from django.utils import timezone

from agent_memory import services
from agent_memory.models import AgentMemory
from agent_memory.views import word_diff
from tests.factories import ConversationFactory, UserFactory

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}



@pytest.fixture
def web(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def sarah(alice):
    conversation = ConversationFactory(user=alice, legacy__created_by=alice,
                                       title="Talking about work")
    memory = services.memory_create(user=alice, content="Sarah works on the Platform team",
                                    category="person", subject="Sarah",
                                    source_conversation=conversation)
    services.memory_update(user=alice, memory=memory, content="Sarah works on the Design team")
    return memory


def test_word_diff_marks_removed_and_added_words_and_escapes():
    assert word_diff("Sarah works on the Platform team", "Sarah works on the Design team") == (
        "Sarah works on the <del>Platform</del> <ins>Design</ins> team"
    )
    assert word_diff("likes <b>", "likes <i> too") == (
        "likes <del>&lt;b&gt;</del> <ins>&lt;i&gt; too</ins>"
    )


def test_the_list_groups_my_memories_by_category(web, alice, sarah):
    services.memory_create(user=alice, content="User likes <em>concise</em> answers",
                           category="preference")
    services.memory_create(user=UserFactory(username="bob"), content="Bob's secret memory",
                           category="person")
    response = web.get("/memories")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.index("<h2>Person") < html.index("<h2>Preference")
    assert "Sarah works on the Design team" in html
    assert f'href="/memories/{sarah.pk}"' in html
    assert f'href="/memories/{sarah.pk}/delete"' in html
    assert "version 2" in html
    assert "User likes &lt;em&gt;concise&lt;/em&gt; answers" in html
    assert "Bob&#x27;s secret memory" not in html and "Bob's secret memory" not in html
    assert 'href="/memories">My memories</a>' in html
    assert "Deleted memories" not in html


def test_an_empty_list_says_what_will_appear(web):
    html = web.get("/memories").content.decode()
    assert "The assistant doesn't remember anything about you yet." in html


def test_the_history_is_a_timeline_with_changes_and_sources(web, sarah):
    response = web.get(f"/memories/{sarah.pk}")
    assert response.status_code == 200
    html = response.content.decode()
    assert html.index("Version 1") < html.index("Version 2")
    assert "Sarah works on the Platform team" in html
    assert "<del>Platform</del> <ins>Design</ins>" in html
    assert "From the conversation “Talking about work”" in html
    assert "Not linked to a conversation" in html
    fragment = web.get(f"/memories/{sarah.pk}", **HTMX).content.decode()
    assert fragment.lstrip().startswith('<ol class="timeline"')
    assert "<html" not in fragment


def test_someone_else_s_or_a_missing_memory_is_a_404(web, sarah):
    theirs = services.memory_create(user=UserFactory(username="bob"), content="Bob's memory",
                                    category="person")
    for memory_id in (theirs.pk, "zzzzzzzz"):
        assert web.get(f"/memories/{memory_id}").status_code == 404
        assert web.get(f"/memories/{memory_id}/delete").status_code == 404
        assert web.post(f"/memories/{memory_id}/delete").status_code == 404
    assert AgentMemory.objects.filter(deleted_at__isnull=False).count() == 0


def test_delete_asks_first_then_deletes_without_javascript(web, alice, sarah):
    confirm = web.get(f"/memories/{sarah.pk}/delete")
    assert confirm.status_code == 200
    assert "Delete this memory?" in confirm.content.decode()
    assert AgentMemory.objects.get(pk=sarah.pk).deleted_at is None
    response = web.post(f"/memories/{sarah.pk}/delete", follow=True)
    assert response.redirect_chain == [("/memories", 302)]
    html = response.content.decode()
    assert "Deleted: &#x27;Sarah works on the Design team&#x27;" in html
    assert '<details class="deleted-memories"' in html
    assert "<del>Platform</del> <ins>Design</ins>" in html
    assert AgentMemory.objects.get(pk=sarah.pk).deleted_at is not None
    # Deleted: its history page still opens, the delete page does not.
    history = web.get(f"/memories/{sarah.pk}").content.decode()
    assert "Deleted</strong> on" in history
    assert web.get(f"/memories/{sarah.pk}/delete").status_code == 404


def test_delete_in_place_with_htmx(web, sarah):
    confirm = web.get(f"/memories/{sarah.pk}/delete", **HTMX).content.decode()
    assert confirm.lstrip().startswith(f'<li class="memory card confirming" id="memory-{sarah.pk}"')
    assert 'hx-post="/memories/' in confirm
    cancel = web.get(f"/memories/{sarah.pk}/card", **HTMX).content.decode()
    assert cancel.lstrip().startswith(f'<li class="memory card" id="memory-{sarah.pk}"')
    sections = web.post(f"/memories/{sarah.pk}/delete", **HTMX)
    assert sections.status_code == 200
    html = sections.content.decode()
    assert html.lstrip().startswith('<div id="memory-sections">')
    assert "Deleted: &#x27;Sarah works on the Design team&#x27;" in html
    assert "Deleted memories (1)" in html


def test_the_card_without_htmx_goes_to_the_list(web, sarah):
    response = web.get(f"/memories/{sarah.pk}/card")
    assert (response.status_code, response["Location"]) == (302, f"/memories#memory-{sarah.pk}")


def test_an_evicted_memory_says_why_it_left(web, alice, sarah):
    AgentMemory.objects.filter(pk=sarah.pk).update(
        deleted_at=timezone.now(), evicted_at=timezone.now()
    )
    html = web.get("/memories").content.decode()
    assert "removed to keep memory within its size limit" in html


def test_pages_need_a_login(client, sarah):
    for path in ("/memories", f"/memories/{sarah.pk}", f"/memories/{sarah.pk}/delete"):
        response = client.get(path)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
    assert client.post(f"/memories/{sarah.pk}/delete").status_code == 302
    assert AgentMemory.objects.get(pk=sarah.pk).deleted_at is None
