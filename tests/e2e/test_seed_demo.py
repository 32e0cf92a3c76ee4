"""`manage.py seed_demo`: demo users, a shared legacy and tokens that work with the API; the
facts demo data (both members' facts, some shared, some private); the conversations' demo data
(closed conversations whose jobs make summaries, chunks and facts); alice's and bob's memories
(one with three versions) and a place; all of it once, however often it runs."""

import io
import logging
import re

import pytest
from django.core.management import call_command
from django_q.models import OrmQ
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from agent_memory import selectors as memory_selectors
from agent_memory.models import AgentMemory, AgentMemoryVersion, Place, PlaceMention
from conversations.models import Conversation
from facts import selectors as fact_selectors
from facts.models import Legacy, LegacyFact, LegacyMembership
from memory_site.demo import conversations as conversations_demo
from memory_site.demo import facts as facts_demo
from tests.conftest import api_client_for
from tests.factories import (
    ConversationFactory,
    LegacyFactFactory,
    LegacyFactory,
    MembershipFactory,
    UserFactory,
)
from tests.support.prompt import memory_block, places_block

pytestmark = pytest.mark.django_db


def _token(username: str) -> str:
    out = io.StringIO()
    call_command("seed_demo", print_token=username, stdout=out)
    return out.getvalue().strip()


def test_seed_demo_is_idempotent_and_prints_working_tokens():
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    call_command("seed_demo", stdout=io.StringIO())
    text = out.getvalue()
    assert "User alice (owner)" in text and "User bob (member)" in text
    legacy = Legacy.objects.get(name="Rose Whitfield")
    assert Legacy.objects.count() == 1
    roles = dict(legacy.memberships.values_list("user__username", "role"))
    assert roles == {"alice": "owner", "bob": "member"}
    assert LegacyMembership.objects.count() == 2


def test_the_readme_curl_flow_appends_a_message():
    token = _token("alice")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    legacy_id = client.get("/api/legacies").json()["legacies"][0]["id"]
    conversation = client.post(
        "/api/ai/conversations", {"legacy_id": legacy_id, "title": "First chat"}, format="json"
    ).json()
    response = client.post(
        f"/api/ai/conversations/{conversation['id']}/messages",
        {"role": "user", "content": "Mum grew roses in Galway."},
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["sequence"] == 0


def test_seed_demo_prints_the_curl_for_the_port_of_make_run(monkeypatch, settings, tmp_path):
    settings.MEMORY_DATA_DIR = tmp_path
    monkeypatch.setenv("PORT", "8050")
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    token = Token.objects.get(user__username="alice").key
    assert out.getvalue().splitlines()[-1] == (
        f'  curl -s -H "Authorization: Token {token}" http://127.0.0.1:8050/api/legacies'
    )
    monkeypatch.delenv("PORT")
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    assert out.getvalue().splitlines()[-1].endswith(" http://127.0.0.1:8000/api/legacies")
    # In another terminal than `make run PORT=8622`: where bin/run wrote that it serves.
    (tmp_path / "serving").write_text("127.0.0.1:8622\n")
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    assert out.getvalue().splitlines()[-1].endswith(" http://127.0.0.1:8622/api/legacies")


@pytest.mark.django_db(transaction=True)
def test_seed_demo_does_not_log_the_jobs_it_enqueues(settings, caplog):
    # Committed for real, with the ORM queue of `make run`, so the jobs are enqueued in the
    # command, where django-q2 logs each at INFO between the command's own lines.
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": False}
    with caplog.at_level(logging.INFO):
        call_command("seed_demo", stdout=io.StringIO())
    assert OrmQ.objects.exists()
    assert [r.getMessage() for r in caplog.records if r.name == "django-q"] == []
    assert logging.getLogger("django-q").level == logging.NOTSET


def test_a_second_seed_demo_says_what_the_jobs_made(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_demo", stdout=io.StringIO())
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("Conversation ")]
    assert [line.split(": id=")[1].split(" ", 1)[1] for line in lines] == [
        "messages=34 summaries=1 chunks=2 (all archived)",
        "messages=10 summaries=1 chunks=1 (all archived)",
    ]
    assert "made by the worker" not in out.getvalue()


def test_seed_demo_gives_both_members_shared_and_private_facts():
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    call_command("seed_demo", stdout=io.StringIO())
    legacy = Legacy.objects.get(name="Rose Whitfield")
    counts = sorted(
        LegacyFact.objects.filter(legacy=legacy).values_list("user__username", "visibility")
    )
    assert counts == sorted(
        [("alice", "shared")] * 3 + [("alice", "private")] * 2
        + [("bob", "shared")] * 2 + [("bob", "private")] * 2
    )
    assert "Facts: 9 added, 9 about Rose Whitfield in all." in out.getvalue()
    bob = legacy.memberships.get(user__username="bob").user
    seen_by_bob = fact_selectors.facts_visible_to(bob, legacy)
    assert seen_by_bob.count() == 4 + 3
    assert "Rose grew peonies by the back door." in [f.content for f in seen_by_bob]
    # The jobs of the demo conversations have not run (nothing is committed in a test), so
    # the sourced facts point at each member's first messages: alice's 34, bob's 10.
    sourced = LegacyFact.objects.filter(legacy=legacy, source_conversation__isnull=False)
    assert sorted(
        sourced.values_list("user__username", "category", "source_conversation__title",
                            "source_range_start", "source_range_end")
    ) == [
        ("alice", "hobby", "Remembering Mom (demo)", 0, 20),
        ("alice", "occupation", "Remembering Mom (demo)", 0, 20),
        ("bob", "other", "Mom's Sunday calls (demo)", 0, 10),
        ("bob", "preference", "Mom's Sunday calls (demo)", 0, 10),
        ("bob", "relationship", "Mom's Sunday calls (demo)", 0, 10),
    ]


def test_demo_facts_point_at_the_member_conversation_when_there_is_one():
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    legacy = LegacyFactory(name="Rose Whitfield", created_by=alice)
    MembershipFactory(legacy=legacy, user=bob)
    conversation = ConversationFactory(legacy=legacy, user=alice)

    lines = facts_demo.seed(users={"alice": alice, "bob": bob}, legacy=legacy)
    assert lines == ["Facts: 9 added, 9 about Rose Whitfield in all."]
    sourced = LegacyFact.objects.filter(source_conversation=conversation)
    assert sorted(sourced.values_list("category", flat=True)) == ["hobby", "occupation"]
    assert set(sourced.values_list("user__username", flat=True)) == {"alice"}
    # No messages yet, so there is no range to point at.
    assert set(sourced.values_list("source_range_start", flat=True)) == {None}
    assert not LegacyFact.objects.filter(user=bob, source_conversation__isnull=False).exists()
    assert facts_demo.seed(users={"alice": alice, "bob": bob}, legacy=legacy) == [
        "Facts: 0 added, 9 about Rose Whitfield in all."
    ]


def test_demo_conversations_are_archived_and_idempotent(django_capture_on_commit_callbacks):
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    legacy = LegacyFactory(name="Rose Whitfield", created_by=alice)
    MembershipFactory(legacy=legacy, user=bob)
    users = {"alice": alice, "bob": bob}
    with django_capture_on_commit_callbacks(execute=True):
        lines = conversations_demo.seed(users=users, legacy=legacy)
    alices = Conversation.objects.get(title=conversations_demo.DEMO_TITLE)
    bobs = Conversation.objects.get(title=conversations_demo.BOB_DEMO_TITLE)
    assert lines == [
        f"Conversation {conversations_demo.DEMO_TITLE!r} (alice, closed): id={alices.pk} messages=34; "
        "its summaries and chunks are made by the worker",
        f"Conversation {conversations_demo.BOB_DEMO_TITLE!r} (bob, closed): id={bobs.pk} messages=10; "
        "its summaries and chunks are made by the worker",
    ]
    assert (alices.user, bobs.user) == (alice, bob)
    assert {alices.status, bobs.status} == {"shutdown_clean"}
    assert list(alices.chunks.values_list("message_range_start", "message_range_end")) == [
        (0, 20), (20, 34)]
    assert list(bobs.chunks.values_list("message_range_start", "message_range_end")) == [(0, 10)]
    assert set(alices.memories.values_list("status", flat=True)) == {"completed"}
    assert set(bobs.memories.values_list("status", flat=True)) == {"completed"}

    alices_facts = set(LegacyFact.objects.filter(user=alice).values_list("content", flat=True))
    assert {
        "Rose retired in 1994 and moved to Florida.",
        "Rose grew peonies by the back door.",
        "Rose married Dad, Henry Whitfield, in June 1955 at the little church on Main Street.",
        "Rose was born in 1931 on a farm in Ohio.",
        "Rose passed away in 2019.",
    } <= alices_facts
    # No fact keeps an object pronoun that points at nothing ("Rose grew them…").
    assert not [fact for fact in alices_facts if re.search(r"\b(them|those|it)\b(?! was)", fact)]
    assert set(
        LegacyFact.objects.filter(user=bob).values_list(
            "content", "source_conversation", "source_range_start", "source_range_end")
    ) == {
        ("Rose called her sister Margaret every Sunday evening.", bobs.pk, 0, 10),
        ("Rose took her tea with honey, never sugar.", bobs.pk, 0, 10),
        ("Rose kept every birthday card she was ever sent.", bobs.pk, 0, 10),
    }

    # A second run adds nothing and says what the jobs have made.
    assert conversations_demo.seed(users=users, legacy=legacy) == [
        f"Conversation {conversations_demo.DEMO_TITLE!r} (alice, closed): id={alices.pk} messages=34 "
        "summaries=1 chunks=2 (all archived)",
        f"Conversation {conversations_demo.BOB_DEMO_TITLE!r} (bob, closed): id={bobs.pk} messages=10 "
        "summaries=1 chunks=1 (all archived)",
    ]
    assert Conversation.objects.count() == 2


def test_seed_demo_memories_are_real_and_idempotent(django_user_model):
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    counts = (AgentMemory.objects.count(), Place.objects.count(), PlaceMention.objects.count())
    call_command("seed_demo", stdout=io.StringIO())
    assert (AgentMemory.objects.count(), Place.objects.count(),
            PlaceMention.objects.count()) == counts
    assert "Agent memories for alice: 5 (see /memories)" in out.getvalue()

    alice = django_user_model.objects.get(username="alice")
    listing = api_client_for(alice).get("/api/memory").json()
    assert listing["total"] == 4
    rose = next(m for m in listing["memories"] if m["subject"] == "Rose")
    assert rose["version"] == 3
    assert "[Rose] Rose Whitfield is Alice's mother; she taught Alice to play the piano at six" \
        in memory_block(alice)
    assert places_block(alice).startswith("PLACES OF INTEREST:")
    assert memory_selectors.deleted_memories_for_user(alice).count() == 1
    bob = django_user_model.objects.get(username="bob")
    bobs = api_client_for(bob).get("/api/memory").json()
    assert bobs["total"] == 2
    assert sorted(m["content"] for m in bobs["memories"]) == [
        "Bob likes hearing Dad's old fishing stories from the lake cabin",
        "Margaret is Bob's aunt, the youngest of Rose's three sisters",
    ]
    # Memories point at the member's own demo conversation.
    assert set(
        AgentMemoryVersion.objects.filter(memory__user=bob).values_list(
            "source_conversation__title", flat=True)
    ) == {"Mom's Sunday calls (demo)"}


def test_a_second_run_gives_the_token_and_brings_back_nothing_the_user_changed():
    """The README runs `seed_demo` and then `seed_demo --print-token alice`: the second run
    re-seeded, so a fact alice had deleted came back, and a fact she had corrected was added
    again beside its correction (found by an outside audit)."""
    call_command("seed_demo", stdout=io.StringIO())
    alice = Token.objects.get(user__username="alice").user
    crossword = LegacyFact.objects.get(user=alice, content__contains="crossword")
    married = LegacyFact.objects.get(user=alice, content__contains="married Henry")
    crossword.delete()
    correction = LegacyFactFactory(legacy=married.legacy, user=alice, category="milestone",
                                   content=married.content.replace("1955", "1956"))
    married.superseded_by = correction
    married.save(update_fields=["superseded_by"])
    facts = LegacyFact.objects.count()

    # A demo conversation deleted is not made again (its job would extract its facts again).
    Conversation.objects.filter(user__username="bob").delete()
    assert _token("alice") == Token.objects.get(user=alice).key
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    assert "nothing was added" in out.getvalue()
    assert LegacyFact.objects.count() == facts
    assert not LegacyFact.objects.filter(content__contains="crossword").exists()
    assert not Conversation.objects.filter(user__username="bob").exists()
