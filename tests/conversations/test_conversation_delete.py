"""Deleting one conversation (issue 15): the service, its API and its pages, and a summarisation
job that runs while it is deleted."""

import re
import threading
import time

import pytest
from django.db import connection
from django.urls import reverse
from django.utils.html import escape

from agent_memory.models import AgentMemoryVersion, Place, PlaceMention
from agent_memory.services import memory_create, place_add
from conversations import services, tasks
from conversations.context import build_context
from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message
from conversations.services import summarization
from facts.models import LegacyFact
from memory_site.core.errors import NotFound
from tests.conftest import api_client_for
from tests.factories import ConversationFactory, LegacyFactFactory, import_messages
from tests.support.talk import talk
from tests.support.threads import in_thread

_talk = talk


def _summarised(conversation: Conversation, count: int = 40) -> Conversation:
    """A conversation run through the real pipeline: a rolling summary, one archived chunk (its
    first 20 messages) and the facts extracted from it."""
    _talk(conversation, count)
    summarization.conversation_catch_up(conversation=conversation)
    return conversation


def _rows_of(conversation_id) -> dict[str, int]:
    return {
        "conversations": Conversation.objects.filter(pk=conversation_id).count(),
        "messages": Message.objects.filter(conversation_id=conversation_id).count(),
        "summaries": ConversationMemory.objects.filter(conversation_id=conversation_id).count(),
        "chunks": ConversationChunk.objects.filter(conversation_id=conversation_id).count(),
        "place_mentions": PlaceMention.objects.filter(conversation_id=conversation_id).count(),
        "facts": LegacyFact.objects.filter(source_conversation_id=conversation_id).count(),
    }


def _everything() -> tuple:
    """Every row count the delete could touch, and what facts and versions point at."""
    return (
        Conversation.objects.count(), Message.objects.count(),
        ConversationMemory.objects.count(), ConversationChunk.objects.count(),
        PlaceMention.objects.count(), Place.objects.count(),
        sorted(LegacyFact.objects.values_list("content", "source_conversation_id")),
        sorted(AgentMemoryVersion.objects.values_list("content", "source_conversation_id")),
    )


@pytest.fixture
def world(db, family):
    """The owner's conversation `lake` with every kind of row taken from it, an `earlier`
    conversation of theirs about the same legacy, a fact added by hand and a member's shared
    fact; `lake` also named as the source of an agent memory and of a place mention."""
    lake = _summarised(ConversationFactory(user=family.owner, legacy=family.legacy,
                                           title="Summers at the lake"))
    earlier = ConversationFactory(user=family.owner, legacy=family.legacy, title="Her garden")
    import_messages(earlier, [("user", "Rose grew dahlias in the garden."),
                              ("assistant", "Lovely.")])
    place_add(user=family.owner, place_id="lake-cabin", name="The lake cabin", conversation=lake)
    place_add(user=family.owner, place_id="lake-cabin", name="The lake cabin",
              conversation=earlier)
    memory_create(user=family.owner, category="person", subject="Anna",
                  content="Anna is the user's sister", source_conversation=lake)
    by_hand = LegacyFactFactory(legacy=family.legacy, user=family.owner,
                                content="Rose kept bees.")
    shared = LegacyFactFactory(legacy=family.legacy, user=family.member, visibility="shared",
                               content="Rose sang in the choir.")
    facts = list(LegacyFact.objects.filter(source_conversation=lake).order_by("extracted_at"))
    assert len(facts) >= 2  # the pipeline took some
    return {"family": family, "lake": lake, "earlier": earlier, "facts": facts,
            "by_hand": by_hand, "shared": shared}


# --- The service -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_delete_takes_everything_of_the_conversation_and_counts_it(world):
    lake, earlier = world["lake"], world["earlier"]
    kept_elsewhere = _rows_of(earlier.pk)
    facts = len(world["facts"])
    assert _rows_of(lake.pk) == {"conversations": 1, "messages": 40, "summaries": 1,
                                 "chunks": 1, "place_mentions": 1, "facts": facts}

    counts = services.conversation_delete(conversation=lake)

    assert counts == {"conversations": 1, "messages": 40, "summaries": 1, "chunks": 1,
                      "place_mentions": 1, "facts": facts, "facts_kept": 0}
    assert _rows_of(lake.pk) == dict.fromkeys(kept_elsewhere, 0)
    assert not LegacyFact.objects.filter(pk__in=[f.pk for f in world["facts"]]).exists()
    # Nothing else: the other conversation, the place, the facts not taken from it.
    assert _rows_of(earlier.pk) == kept_elsewhere
    assert Place.objects.get(place_id="lake-cabin").mentions.get().conversation == earlier
    assert set(LegacyFact.objects.values_list("content", flat=True)) == {
        "Rose kept bees.", "Rose sang in the choir."
    }
    # The agent memory keeps its text; its version no longer names a source.
    version = AgentMemoryVersion.objects.get(memory__subject="Anna")
    assert (version.content, version.source_conversation_id) == ("Anna is the user's sister", None)


@pytest.mark.django_db
def test_keep_facts_keeps_them_as_the_users_own_with_no_source(world):
    lake = world["lake"]
    facts = world["facts"]

    counts = services.conversation_delete(conversation=lake, keep_facts=True)

    assert counts == {"conversations": 1, "messages": 40, "summaries": 1, "chunks": 1,
                      "place_mentions": 1, "facts": 0, "facts_kept": len(facts)}
    kept = LegacyFact.objects.filter(pk__in=[f.pk for f in facts]).order_by("extracted_at")
    assert [(f.content, f.user_id, f.source_conversation_id, f.source_range_start,
             f.source_range_end) for f in kept] == [
        (f.content, f.user_id, None, None, None) for f in facts
    ]
    assert _rows_of(lake.pk) == {"conversations": 0, "messages": 0, "summaries": 0, "chunks": 0,
                                 "place_mentions": 0, "facts": 0}


@pytest.mark.django_db
def test_another_authors_fact_naming_it_is_not_deleted(world):
    # Facts come from their author's own conversations; a row that says otherwise loses the
    # link and stays.
    stray = LegacyFactFactory(legacy=world["family"].legacy, user=world["family"].member,
                              content="Rose fished at dawn.", source_conversation=world["lake"])
    counts = services.conversation_delete(conversation=world["lake"])
    assert counts["facts"] == len(world["facts"])
    stray.refresh_from_db()
    assert (stray.content, stray.source_conversation_id) == ("Rose fished at dawn.", None)


@pytest.mark.django_db
def test_deleting_it_twice_is_not_found_the_second_time(world):
    lake = world["lake"]
    services.conversation_delete(conversation=lake)
    with pytest.raises(NotFound):
        services.conversation_delete(conversation=lake)


@pytest.mark.django_db
@pytest.mark.parametrize("keep_facts", [False, True])
def test_the_facts_page_and_the_next_context_show_nothing_of_it(world, client, keep_facts):
    family, lake, earlier = world["family"], world["lake"], world["earlier"]
    chunk = ConversationChunk.objects.get(conversation=lake)
    fact_texts = [f.content for f in world["facts"]]
    fact_html = [escape(text) for text in fact_texts]
    client.force_login(family.owner)
    facts_url = reverse("facts:legacy_facts", args=[family.legacy.pk])
    query = "fishing at the lake cabin, the nurse at St. Mary's Hospital"

    before = build_context(conversation=earlier, query=query)
    assert lake.pk in {hit.conversation_id for hit in before.retrieved}
    assert set(fact_texts) <= {f.content for f in before.facts}
    page = client.get(facts_url).content.decode()
    assert all(text in page for text in fact_html)
    assert reverse("conversations:transcript", args=[lake.pk]) in page

    services.conversation_delete(conversation=lake, keep_facts=keep_facts)

    after = build_context(conversation=earlier, query=query)
    assert lake.pk not in {hit.conversation_id for hit in after.retrieved}
    assert chunk.content not in after.system_prompt
    assert "Summers at the lake" not in after.system_prompt
    assert "The lake cabin" in after.system_prompt  # the place stays, with its other mention
    assert "Anna is the user's sister" in after.system_prompt
    page = client.get(facts_url).content.decode()
    assert reverse("conversations:transcript", args=[lake.pk]) not in page
    assert "Rose kept bees." in page and "Rose sang in the choir." in page
    if keep_facts:
        assert set(fact_texts) <= {f.content for f in after.facts}
        assert all(text in page for text in fact_html)
    else:
        assert not set(fact_texts) & {f.content for f in after.facts}
        assert not any(text in after.system_prompt for text in fact_texts)
        assert not any(text in page for text in fact_html)


# --- A summarisation job running while the conversation is deleted ---------------------------


def _job_in_thread(conversation_id) -> tuple[threading.Thread, dict]:
    return in_thread(lambda: tasks.summarize_conversation(str(conversation_id)))


def _wait_for(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.django_db(transaction=True)
def test_a_rolling_summary_being_written_when_it_is_deleted_leaves_nothing(family, openai_llm):
    """Deleted between rolling_summary_begin (its `processing` row committed) and the
    summary's completion: the job finds the row gone and stops."""
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    _talk(conversation, 12)  # a rolling summary is due, no archive yet
    openai_llm.chat_text("They talked about the lake.", delay=1.0)
    thread, outcome = _job_in_thread(conversation.pk)
    _wait_for(lambda: len(openai_llm.calls()) == 1)
    assert ConversationMemory.objects.get(conversation=conversation).status == "processing"

    counts = services.conversation_delete(conversation=conversation)

    thread.join(timeout=20)
    assert "error" not in outcome
    assert outcome["result"] == {"conversation_id": str(conversation.pk), "skipped": "deleted"}
    assert counts["summaries"] == 1
    assert _rows_of(conversation.pk) == dict.fromkeys(counts.keys() - {"facts_kept"}, 0)
    assert not ConversationMemory.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_an_archive_batch_whose_provider_call_outlives_the_conversation_stores_nothing(
    family, openai_llm
):
    """Deleted between an archive batch's LLM call and its insert: the insert finds the
    conversation gone, stores no chunk and no fact, and the job stops."""
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    _talk(conversation, 40)
    openai_llm.chat_text("They talked about the lake.")  # the rolling summary, at once
    openai_llm.chat_json({
        "summary": "Rose fished at the lake cabin.",
        "facts": [{"category": "hobby", "content": "Rose loved fishing."}],
    }, delay=1.0)
    thread, outcome = _job_in_thread(conversation.pk)
    _wait_for(lambda: len(openai_llm.calls()) == 2)

    counts = services.conversation_delete(conversation=conversation)

    thread.join(timeout=20)
    assert "error" not in outcome
    assert outcome["result"] == {"conversation_id": str(conversation.pk), "skipped": "deleted"}
    assert counts == {"conversations": 1, "messages": 40, "summaries": 1, "chunks": 0,
                      "place_mentions": 0, "facts": 0, "facts_kept": 0}
    assert not ConversationChunk.objects.exists()
    assert not LegacyFact.objects.exists()
    assert not ConversationMemory.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_delete_waits_for_an_archive_insert_under_way_and_takes_it_along(family, monkeypatch):
    """The other order: the batch's insert holds the conversation's row lock when the delete
    comes; the delete waits for it, then deletes the chunk and facts it wrote too."""
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    _talk(conversation, 40)
    inserting = threading.Event()
    release = threading.Event()
    locks = []
    lock = summarization._lock_conversation

    def lock_then_wait(locked_conversation):
        lock(locked_conversation)
        locks.append(locked_conversation.pk)
        if len(locks) == 2:  # the archive's insert (the first lock is the rolling summary's)
            inserting.set()
            release.wait(timeout=10)

    monkeypatch.setattr(summarization, "_lock_conversation", lock_then_wait)
    thread, outcome = _job_in_thread(conversation.pk)
    assert inserting.wait(timeout=10)
    deleted: dict = {}

    def delete() -> None:
        try:
            deleted.update(services.conversation_delete(conversation=conversation))
        finally:
            connection.close()

    deleter = threading.Thread(target=delete)
    deleter.start()
    time.sleep(0.3)
    assert deleted == {}  # waiting for the batch's row lock
    release.set()
    thread.join(timeout=20)
    deleter.join(timeout=20)
    assert "error" not in outcome
    assert outcome["result"]["chunks"] == [[0, 20]]
    assert deleted["conversations"] == 1 and deleted["chunks"] == 1 and deleted["facts"] > 0
    assert not Message.objects.exists()
    assert not ConversationMemory.objects.exists()
    assert not ConversationChunk.objects.exists()
    assert not LegacyFact.objects.exists()


@pytest.mark.django_db
def test_a_job_for_a_conversation_deleted_before_it_started_does_nothing(world):
    lake_id = str(world["lake"].pk)
    services.conversation_delete(conversation=world["lake"])
    assert tasks.summarize_conversation(lake_id) == {"conversation_id": lake_id,
                                                     "skipped": "deleted"}


@pytest.mark.django_db
def test_each_pipeline_write_stops_on_a_conversation_deleted_meanwhile(family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    _talk(conversation, 40)
    memory = summarization.rolling_summary_begin(conversation=conversation)
    services.conversation_delete(conversation=conversation)
    with pytest.raises(summarization.ConversationGone):
        summarization.rolling_summary_generate(memory=memory)
    with pytest.raises(summarization.ConversationGone):
        summarization.rolling_summary_begin(conversation=conversation)
    result = summarization.conversation_catch_up(conversation=conversation)
    assert (result.deleted, result.rolling_summary, result.chunks) == (True, None, [])
    assert _rows_of(conversation.pk) == dict.fromkeys(_rows_of(conversation.pk), 0)
    with pytest.raises(NotFound):
        services.message_append(conversation=conversation, role="user", content="Still there?")


# --- The API ---------------------------------------------------------------------------------


def _api_url(conversation) -> str:
    return f"/api/ai/conversations/{conversation.pk}"


@pytest.mark.django_db
def test_api_delete_answers_the_counts(world):
    lake = world["lake"]
    facts = len(world["facts"])
    response = api_client_for(world["family"].owner).delete(_api_url(lake))
    assert response.status_code == 200
    assert response.json() == {
        "deleted": {"conversations": 1, "messages": 40, "summaries": 1, "chunks": 1,
                    "place_mentions": 1, "facts": facts},
        "facts_kept": 0,
    }
    assert _rows_of(lake.pk)["conversations"] == 0
    assert api_client_for(world["family"].owner).get(_api_url(lake)).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(("value", "kept"), [("true", True), ("false", False)])
def test_api_delete_with_keep_facts(world, value, kept):
    facts = len(world["facts"])
    response = api_client_for(world["family"].owner).delete(
        f"{_api_url(world['lake'])}?keep_facts={value}"
    )
    assert response.status_code == 200
    assert response.json() == {
        "deleted": {"conversations": 1, "messages": 40, "summaries": 1, "chunks": 1,
                    "place_mentions": 1, "facts": 0 if kept else facts},
        "facts_kept": facts if kept else 0,
    }
    assert LegacyFact.objects.filter(pk__in=[f.pk for f in world["facts"]]).count() == (
        facts if kept else 0
    )


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["yes", "1", "TRUE", "no"])
def test_api_keep_facts_other_than_true_or_false_is_a_400_with_nothing_deleted(world, value):
    before = _everything()
    response = api_client_for(world["family"].owner).delete(
        f"{_api_url(world['lake'])}?keep_facts={value}"
    )
    assert response.status_code == 400
    assert response.json() == {
        "detail": f"keep_facts: \"{value}\" is not a valid choice.",
        "code": "invalid",
        "errors": {"keep_facts": [f"\"{value}\" is not a valid choice."]},
    }
    assert _everything() == before


@pytest.mark.django_db
@pytest.mark.parametrize("caller", ["anonymous", "stranger", "other_family", "fellow_member"])
def test_api_delete_of_anyone_elses_conversation_changes_nothing(world, caller):
    family = world["family"]
    user = {"anonymous": None, "stranger": family.stranger, "other_family": family.other_member,
            "fellow_member": family.member}[caller]
    before = _everything()
    response = api_client_for(user).delete(f"{_api_url(world['lake'])}?keep_facts=false")
    if user is None:
        assert response.status_code == 401
        assert response.json() == {"detail": "Authentication credentials were not provided.",
                                   "code": "not_authenticated"}
    else:
        assert response.status_code == 404
        assert response.json() == {"detail": "Not found.", "code": "not_found"}
    assert _everything() == before


@pytest.mark.django_db
def test_the_fellow_members_own_conversation_is_theirs_to_delete(world):
    family = world["family"]
    theirs = ConversationFactory(user=family.member, legacy=family.legacy)
    import_messages(theirs, [("user", "Hello")])
    before = _everything()
    assert api_client_for(family.owner).delete(_api_url(theirs)).status_code == 404
    assert _everything() == before
    response = api_client_for(family.member).delete(_api_url(theirs))
    assert response.status_code == 200
    assert response.json()["deleted"]["messages"] == 1


# --- The pages -------------------------------------------------------------------------------


def _list_url(legacy) -> str:
    return reverse("conversations:conversation_list", args=[legacy.pk])


def _delete_url(conversation) -> str:
    return reverse("conversations:conversation_delete", args=[conversation.pk])


@pytest.fixture
def owner_browser(client, world):
    client.force_login(world["family"].owner)
    return client


@pytest.mark.django_db
def test_the_list_shows_my_conversations_newest_first_with_links(owner_browser, world):
    family = world["family"]
    ConversationFactory(user=family.member, legacy=family.legacy, title="The member's talk")
    ConversationFactory(user=family.owner, title="Another legacy")
    response = owner_browser.get(_list_url(family.legacy))
    assert response.status_code == 200
    html = response.content.decode()
    titles = [m.conversation.title for m in response.context["matches"]]
    assert titles == ["Her garden", "Summers at the lake"]
    assert "The member's talk" not in html and "Another legacy" not in html
    assert "<html" in html
    for conversation in (world["lake"], world["earlier"]):
        assert reverse("conversations:transcript", args=[conversation.pk]) in html
        assert f'href="{_delete_url(conversation)}"' in html
        assert f'hx-get="{_delete_url(conversation)}"' in html


@pytest.mark.django_db
def test_search_finds_text_with_the_agents_search_and_links_the_range(owner_browser, world):
    response = owner_browser.get(_list_url(world["family"].legacy), {"q": "rhubarb pie"})
    assert response.status_code == 200
    matches = response.context["matches"]
    assert [m.conversation for m in matches] == [world["lake"]]
    hits = matches[0].hits
    assert hits and all(hit.conversation_id == world["lake"].pk for hit in hits)
    html = response.content.decode()
    transcript = reverse("conversations:transcript", args=[world["lake"].pk])
    first = hits[0]
    assert (f'{transcript}?from={first.message_range_start}&amp;to={first.message_range_end}'
            f'#m-{first.message_range_start}') in html
    assert "1 conversation matches “rhubarb pie”." in html


@pytest.mark.django_db
def test_search_finds_titles(owner_browser, world):
    response = owner_browser.get(_list_url(world["family"].legacy), {"q": "garden"})
    matches = response.context["matches"]
    assert [(m.conversation, m.title_match) for m in matches][0] == (world["earlier"], True)
    assert "title matches" in response.content.decode()


@pytest.mark.django_db
def test_a_search_that_matches_nothing_says_so(owner_browser, world):
    response = owner_browser.get(_list_url(world["family"].legacy), {"q": "zeppelin"})
    assert response.status_code == 200
    assert response.context["matches"] == []
    assert "No conversation about Rose Whitfield matches “zeppelin”." in response.content.decode()


@pytest.mark.django_db
def test_htmx_search_gets_only_the_results(owner_browser, world):
    response = owner_browser.get(_list_url(world["family"].legacy), {"q": "garden"},
                                 HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html and "<form class=\"filters" not in html
    assert "Her garden" in html


@pytest.mark.django_db
@pytest.mark.parametrize(("q", "error"), [
    ("x" * 1001, "Ensure this value has at most 1000 characters (it has 1001)."),
    ("lake\x00", "Null characters are not allowed."),
])
def test_a_bad_search_is_an_inline_error_and_lists_everything(owner_browser, world, q, error):
    url = _list_url(world["family"].legacy)
    response = owner_browser.get(url, {"q": q})
    assert response.status_code == 400
    assert f"Search: {error} Showing every conversation." in response.content.decode()
    assert len(response.context["matches"]) == 2
    fragment = owner_browser.get(url, {"q": q}, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200  # htmx swaps only 2xx answers
    assert f"Search: {error}" in fragment.content.decode()


@pytest.mark.django_db
def test_the_confirmation_shows_what_goes_and_keeps_nothing_by_default(owner_browser, world):
    lake = world["lake"]
    response = owner_browser.get(_delete_url(lake))
    assert response.status_code == 200
    assert response.context["preview"] == {"messages": 40, "summaries": 1, "chunks": 1,
                                           "place_mentions": 1, "facts": len(world["facts"])}
    html = response.content.decode()
    assert "<html" in html
    checkbox = re.search(r'<input type="checkbox" name="keep_facts"[^>]*>', html).group()
    assert "checked" not in checkbox
    assert "Keep the facts taken from it" in html
    assert "40 messages" in html and f"{len(world['facts'])} facts taken from it" in html
    fragment = owner_browser.get(_delete_url(lake), HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200
    assert fragment.content.decode().lstrip().startswith('<li class="conversation confirming"')
    assert _rows_of(lake.pk)["conversations"] == 1


@pytest.mark.django_db
def test_posting_the_confirmation_deletes_and_goes_back_to_the_list(owner_browser, world):
    lake, family = world["lake"], world["family"]
    facts = len(world["facts"])
    response = owner_browser.post(_delete_url(lake), follow=True)
    assert response.redirect_chain == [(_list_url(family.legacy), 302)]
    html = response.content.decode()
    assert (f"Deleted “Summers at the lake” with 40 messages, 1 summary, 1 archived summary, "
            f"{facts} facts and 1 place mention.") in html
    assert _rows_of(lake.pk) == dict.fromkeys(_rows_of(lake.pk), 0)
    assert [m.conversation for m in response.context["matches"]] == [world["earlier"]]


@pytest.mark.django_db
def test_posting_with_keep_facts_keeps_them(owner_browser, world):
    lake = world["lake"]
    facts = len(world["facts"])
    response = owner_browser.post(_delete_url(lake), {"keep_facts": "on"}, follow=True)
    assert f"{facts} facts taken from it kept." in response.content.decode()
    assert LegacyFact.objects.filter(pk__in=[f.pk for f in world["facts"]]).count() == facts


@pytest.mark.django_db
def test_an_htmx_post_redirects_the_browser_to_the_list(owner_browser, world):
    response = owner_browser.post(_delete_url(world["lake"]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert response["HX-Redirect"] == _list_url(world["family"].legacy)
    assert _rows_of(world["lake"].pk)["conversations"] == 0


@pytest.mark.django_db
@pytest.mark.parametrize("caller", ["stranger", "other_family", "fellow_member"])
def test_pages_of_anyone_elses_conversation_are_404_with_nothing_changed(client, world, caller):
    family = world["family"]
    client.force_login({"stranger": family.stranger, "other_family": family.other_member,
                        "fellow_member": family.member}[caller])
    before = _everything()
    assert client.get(_delete_url(world["lake"])).status_code == 404
    assert client.post(_delete_url(world["lake"]), {"keep_facts": "on"}).status_code == 404
    assert client.post(_delete_url(world["lake"]), HTTP_HX_REQUEST="true").status_code == 404
    assert _everything() == before
    listing = client.get(_list_url(family.legacy))
    if caller == "fellow_member":
        assert listing.status_code == 200
        assert listing.context["matches"] == []
    else:
        assert listing.status_code == 404


@pytest.mark.django_db
def test_the_pages_need_a_login(client, world):
    for url in (_list_url(world["family"].legacy), _delete_url(world["lake"])):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert client.post(_delete_url(world["lake"])).status_code == 302
    assert _rows_of(world["lake"].pk)["conversations"] == 1


@pytest.mark.django_db
def test_chat_home_and_transcript_link_to_the_list(owner_browser, world):
    family = world["family"]
    home = owner_browser.get(reverse("conversations:chat"), {"legacy": family.legacy.pk})
    assert f'href="{_list_url(family.legacy)}"' in home.content.decode()
    transcript = owner_browser.get(reverse("conversations:transcript", args=[world["lake"].pk]))
    assert f'href="{_list_url(family.legacy)}"' in transcript.content.decode()
