"""Every agent write is attributable and reversible (issue 14): the history page says which
conversation and turn changed a memory (or that you did), and one click undoes it as a NEW
version (or deletes what the agent added, or restores what it deleted); history is never
rewritten."""

import pytest
from django.test import Client

from agent_memory import services
from agent_memory.models import AgentMemory, AgentMemoryVersion
from agent_memory.tools import tool_execute
from agent_memory.write_rule import TurnWords
from tests.factories import ConversationFactory, LegacyFactory, UserFactory, import_messages
from tests.support.csrf import csrf_token, signed_in

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def _rows():
    return (list(AgentMemory.objects.order_by("pk").values()),
            list(AgentMemoryVersion.objects.order_by("pk").values()))


@pytest.fixture
def chat(alice):
    return ConversationFactory(user=alice, legacy=LegacyFactory(created_by=alice),
                               title="Talking about work")


def _agent(alice, chat, said, name, arguments):
    """A tool call the model makes in a turn whose user message is `said` (turn 2 of `chat`)."""
    import_messages(chat, [("user", "Hello"), ("assistant", "Hello! How are you?")])
    [message] = import_messages(chat, [("user", said)])
    result = tool_execute(user=alice, name=name, arguments=arguments, conversation=chat,
                          message=message, turn=TurnWords(user_message=said))
    assert result["ok"] is True, result
    return result, message


@pytest.fixture
def sarah(alice):
    return services.memory_create(user=alice, content="Sarah works on the Platform team",
                                  category="person", subject="Sarah", origin="dashboard")


@pytest.fixture
def changed_by_agent(alice, chat, sarah):
    _, message = _agent(alice, chat, "Sarah moved to the Design team", "update_memory",
                        {"memory_id": sarah.pk, "content": "Sarah works on the Design team"})
    return message


@pytest.fixture
def browser(alice):
    return signed_in(alice)


def test_the_history_says_who_changed_each_version_and_in_which_turn(
    browser, sarah, chat, changed_by_agent
):
    html = browser.get(f"/memories/{sarah.pk}").content.decode()
    seq = changed_by_agent.sequence
    assert "Added by you, on the dashboard · Not linked to a conversation" in html
    assert (
        f'Changed by the agent in <a class="origin-link" href="/conversations/{chat.pk}'
        f'?from={seq}&amp;to={seq + 1}#m-{seq}">“Talking about work”</a>, turn 2'
    ) in html
    assert "Undo this change" in html and "Restore this version" in html
    # The list shows the agent's hand on the card, linking to that version.
    card = browser.get("/memories").content.decode()
    assert f'href="/memories/{sarah.pk}#version-2">by the agent in a chat: see the turn, undo' \
        in card


def test_one_click_undoes_the_agents_change_as_a_new_version(browser, alice, sarah,
                                                            changed_by_agent):
    earlier = list(AgentMemoryVersion.objects.filter(memory=sarah).order_by("version_number")
                   .values())
    token = csrf_token(browser, f"/memories/{sarah.pk}")

    response = browser.post(f"/memories/{sarah.pk}/revert",
                            {"version": "2", "csrfmiddlewaretoken": token})

    assert response.status_code == 302 and response["Location"] == f"/memories/{sarah.pk}"
    versions = list(AgentMemoryVersion.objects.filter(memory=sarah).order_by("version_number"))
    # History is added to: versions 1 and 2 are exactly as they were.
    assert [v for v in AgentMemoryVersion.objects.filter(memory=sarah)
            .order_by("version_number").values()][:2] == earlier
    assert [(v.version_number, v.content, v.origin, v.restored_from) for v in versions] == [
        (1, "Sarah works on the Platform team", "dashboard", None),
        (2, "Sarah works on the Design team", "agent", None),
        (3, "Sarah works on the Platform team", "dashboard", 1),
    ]
    page = browser.get(f"/memories/{sarah.pk}").content.decode()
    assert "Undone: version 3 has the text &#x27;Sarah works on the Platform team&#x27;." in page
    assert "Restored from version 1 by you, on the dashboard" in page
    assert "Undo this change" not in page  # the current version is the user's


def test_undo_in_place_with_htmx(browser, sarah, changed_by_agent):
    token = csrf_token(browser, f"/memories/{sarah.pk}")
    response = browser.post(f"/memories/{sarah.pk}/revert",
                            {"version": "2", "csrfmiddlewaretoken": token}, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="memory-history">') and "<html" not in html
    assert "Undone: version 3 has the text" in html
    assert sarah.versions.count() == 3


def test_undoing_what_the_agent_added_deletes_it_and_it_can_come_back(browser, alice, chat):
    result, _ = _agent(alice, chat, "Remember that Anna is my sister", "add_to_memory",
                       {"content": "Anna is the user's sister", "category": "person"})
    memory_id = result["result"]["memory_id"]
    html = browser.get(f"/memories/{memory_id}").content.decode()
    assert "Added by the agent in" in html and "Undo: delete this memory" in html
    token = csrf_token(browser, f"/memories/{memory_id}")

    browser.post(f"/memories/{memory_id}/revert", {"version": "1", "csrfmiddlewaretoken": token})

    memory = AgentMemory.objects.get(pk=memory_id)
    assert memory.deleted_at is not None and memory.deleted_origin == "dashboard"
    assert memory.versions.count() == 1
    browser.post(f"/memories/{memory_id}/restore", {"csrfmiddlewaretoken": token})
    assert AgentMemory.objects.get(pk=memory_id).deleted_at is None


def test_a_deactivation_by_the_agent_is_shown_with_its_turn_and_undone(browser, alice, chat,
                                                                       sarah):
    _, message = _agent(alice, chat, "Please forget that Sarah works on the Platform team",
                        "manage_user_memory", {"operation": "deactivate_fact",
                                               "fact_id": sarah.pk})
    memory = AgentMemory.objects.get(pk=sarah.pk)
    assert (memory.deleted_origin, memory.deleted_source_message) == ("agent", message)
    html = browser.get(f"/memories/{sarah.pk}").content.decode()
    assert f'by the agent in <a class="origin-link" href="/conversations/{chat.pk}' in html
    assert "“Talking about work”</a>, turn 2" in html
    assert "Undo: restore this memory" in html
    token = csrf_token(browser, f"/memories/{sarah.pk}")

    response = browser.post(f"/memories/{sarah.pk}/revert", {"csrfmiddlewaretoken": token})

    assert response.status_code == 302
    memory = AgentMemory.objects.get(pk=sarah.pk)
    assert (memory.deleted_at, memory.deleted_origin, memory.deleted_source_message) == (
        None, "", None)
    assert [v.content for v in memory.versions.order_by("version_number")] == [
        "Sarah works on the Platform team", "Sarah works on the Platform team",
    ]


def test_only_the_latest_change_can_be_undone(browser, alice, sarah, changed_by_agent):
    services.memory_update(user=alice, memory=sarah, content="Sarah leads the Design team",
                           origin="dashboard")
    before = _rows()
    token = csrf_token(browser, f"/memories/{sarah.pk}")
    response = browser.post(f"/memories/{sarah.pk}/revert",
                            {"version": "2", "csrfmiddlewaretoken": token})
    assert response.status_code == 400
    assert ("Only the latest change can be undone; restore an earlier version instead."
            in response.content.decode())
    assert _rows() == before
    for bad in ("", "9", "abc"):
        assert browser.post(f"/memories/{sarah.pk}/revert",
                            {"version": bad, "csrfmiddlewaretoken": token}).status_code in (400, 404)
    assert _rows() == before


def test_undo_needs_the_csrf_token_and_the_owner(sarah, changed_by_agent):
    before = _rows()
    no_token = signed_in(sarah.user).post(f"/memories/{sarah.pk}/revert", {"version": "2"})
    assert no_token.status_code == 403
    bob = Client()
    bob.force_login(UserFactory(username="bob"))
    for url in (f"/memories/{sarah.pk}/revert", f"/memories/{sarah.pk}/restore"):
        assert bob.post(url, {"version": "1"}).status_code == 404
    assert Client().post(f"/memories/{sarah.pk}/revert", {"version": "2"}).status_code == 302
    assert _rows() == before
