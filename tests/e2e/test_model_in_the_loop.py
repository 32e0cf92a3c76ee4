"""A model in the loop: seed 003's six testing scenarios and seed 000's "contradicting facts from
the same user", end to end through POST …/turn (and …/close for the archive) with
LLM_PROVIDER=openai against the local OpenAI-compatible server answering as a model that
follows the prompt (tests/support/model.py). Each step asserts what the model RECEIVED and what
was stored. Jobs run in-process (sync), so the rolling summary completes after every reply:
the worst case for "the agent forgets what it just said". The offline provider runs the same
flows where its rules apply (the last tests)."""

import pytest

from agent_memory.models import AgentMemory
from agent_memory.selectors import active_memories_for_user
from agent_memory.services import memory_create
from facts.models import LegacyFact
from tests.factories import ConversationFactory
from tests.support.model import PromptFollowingModel, fenced

pytestmark = pytest.mark.django_db

QUESTION = "Would you like me to remember that Alec is your boss?"


@pytest.fixture
def model(openai_llm):
    openai_llm.responder = PromptFollowingModel()
    return openai_llm


@pytest.fixture
def talk(family, owner_client, django_capture_on_commit_callbacks):
    """talk(conversation, content) → (turn body, the chat requests with tools it made); the
    jobs it enqueues (rolling summary) run when it commits, as a fast worker would."""
    state = {"server": None}

    def run(conversation, content):
        server = state["server"]
        before = len(server.calls("chat")) if server else 0
        with django_capture_on_commit_callbacks(execute=True):
            response = owner_client.post(f"/api/ai/conversations/{conversation.pk}/turn",
                                         {"content": content}, format="json")
        assert response.status_code in (200, 201), response.json()
        calls = server.calls("chat")[before:] if server else []
        return response.json(), [c for c in calls if c.body.get("tools")]

    run.state = state
    return run


@pytest.fixture
def chat(talk, model):
    talk.state["server"] = model
    return talk


@pytest.fixture
def archived(owner_client, django_capture_on_commit_callbacks):
    """archived(conversation, *said): the user's messages, then close (the archive job runs)."""

    def run(conversation, *said: str) -> None:
        for content in said:
            response = owner_client.post(f"/api/ai/conversations/{conversation.pk}/messages",
                                         {"role": "user", "content": content}, format="json")
            assert response.status_code == 201, response.json()
        with django_capture_on_commit_callbacks(execute=True):
            response = owner_client.post(f"/api/ai/conversations/{conversation.pk}/close")
        assert response.status_code == 200, response.json()

    return run


def _memory(user):
    return active_memories_for_user(user).get()


def _conversation(family):
    return ConversationFactory(user=family.owner, legacy=family.legacy)


def _reply(body) -> str:
    return body["reply"]


def _warm_up(chat, conversation, exchanges: int = 3) -> None:
    for said in ("Rose loved the lake house.", "She swam there every summer.",
                 "Her sister Mae came too.")[:exchanges]:
        chat(conversation, said)


def test_scenario_1_proactive_suggestion_then_yes_stores_the_memory(family, chat):
    conversation = _conversation(family)
    _warm_up(chat, conversation)

    body, _ = chat(conversation, "Alec is my boss by the way")
    assert _reply(body) == QUESTION
    # The worker has already summarised past the agent's question: only the raw turns keep it.
    summary = conversation.memories.filter(status="completed").latest("end_sequence")
    assert summary.end_sequence >= body["assistant_message"]["sequence"]

    body, calls = chat(conversation, "Yes")

    received = calls[0].messages
    assert received[-2:] == [{"role": "assistant", "content": QUESTION},
                             {"role": "user", "content": "Yes"}]
    memory = _memory(family.owner)
    assert (memory.content, memory.category, memory.subject) == (
        "Alec is the user's boss", "person", "Alec")
    assert memory.versions.get().source_conversation == conversation
    assert _reply(body) == "Done, I'll remember that."


def test_scenario_2_a_new_session_recalls_the_memory(family, chat):
    memory = memory_create(user=family.owner, content="Alec is the user's boss",
                           category="person", subject="Alec")

    body, calls = chat(_conversation(family), "What do you know about Alec?")

    assert f"- [id:{memory.pk}] [Alec] Alec is the user's boss" in (
        calls[0].messages[0]["content"].splitlines())
    assert _reply(body) == "From what I have: Alec is the user's boss"


def test_scenario_3_changed_information_updates_the_same_memory(family, chat):
    memory = memory_create(user=family.owner, content="Sarah works on the Platform team",
                           category="person", subject="Sarah")

    body, calls = chat(_conversation(family), "Sarah moved to the Design team last week")

    assert f"- [id:{memory.pk}] [Sarah] Sarah works on the Platform team" in (
        calls[0].messages[0]["content"].splitlines())
    assert AgentMemory.objects.filter(user=family.owner).count() == 1
    assert _memory(family.owner).content == "Sarah moved to the Design team last week"
    assert list(memory.versions.values_list("version_number", flat=True)) == [1, 2]
    assert _reply(body) == "Done, I'll remember that."


def test_scenario_4_a_declined_suggestion_stores_nothing(family, chat):
    conversation = _conversation(family)
    body, _ = chat(conversation, "I'm working with James on this project")
    offer = "Would you like me to remember that you're working with James on this project?"
    assert _reply(body) == offer

    body, calls = chat(conversation, "No, it's just for this task")

    assert calls[0].messages[-2:] == [{"role": "assistant", "content": offer},
                                      {"role": "user", "content": "No, it's just for this task"}]
    assert _reply(body) == "No problem, I won't store that."
    assert not AgentMemory.objects.filter(user=family.owner).exists()


def test_scenarios_5_and_6_memory_commands_never_reach_the_model(family, chat, model):
    memory = memory_create(user=family.owner, content="Alec is the user's boss",
                           category="person", subject="Alec")
    conversation = _conversation(family)
    before = len(model.calls("chat"))

    listed, calls = chat(conversation, "/memory")
    assert listed["command"] is True and calls == []
    assert f"[{memory.pk}] Alec is the user's boss" in _reply(listed)

    deleted, calls = chat(conversation, f"/memory delete {memory.pk}")
    assert deleted["command"] is True and calls == []
    assert not active_memories_for_user(family.owner).exists()
    assert len(model.calls("chat")) == before  # no model call at all
    body, calls = chat(conversation, "What do you know about Alec?")
    assert "Alec is the user's boss" not in calls[0].messages[0]["content"]


def test_seed_000_a_correction_in_a_later_conversation_supersedes_the_fact(
        family, archived, chat, model):
    first, second = _conversation(family), _conversation(family)
    archived(first, "Rose married Tom in 1961.")
    old = LegacyFact.objects.get(user=family.owner)
    assert "1961" in old.content

    archived(second, "Sorry, I got that wrong: Rose married Tom in 1962.")

    extraction = [c for c in model.calls("chat") if '"facts"' in c.messages[0]["content"]][-1]
    sent = extraction.messages[-1]["content"]
    assert "<known_facts>" in sent and old.content in sent  # the current fact, fenced
    current = LegacyFact.objects.get(user=family.owner, superseded_by__isnull=True)
    assert "1962" in current.content and current.source_conversation == second
    old.refresh_from_db()
    assert old.superseded_by == current

    body, calls = chat(_conversation(family), "When did Rose marry Tom?")
    system = calls[0].messages[0]["content"]
    facts = fenced(system, "legacy_facts")
    assert any(current.content in line for line in facts)
    assert not any("1961" in line for line in facts)
    # The first conversation keeps its words; the prompt says they were corrected.
    earlier = [line for line in fenced(system, "earlier_conversations") if "1961" in line]
    assert earlier and all(line.endswith(f"(corrected later: {current.content})")
                           for line in earlier)
    assert "1962" in _reply(body)


# --- The same flows with the offline provider, where its rules apply -------------------------


def test_offline_an_explicit_request_is_stored_and_recalled_in_a_new_session(family, talk,
                                                                              owner_client):
    talk(_conversation(family), "Remember that Alec is my boss.")
    memory = _memory(family.owner)
    assert memory.content == "Alec is my boss"

    response = owner_client.get(
        f"/api/ai/conversations/{_conversation(family).pk}/context")
    assert f"[id:{memory.pk}]" in response.json()["system_prompt"]


def test_offline_a_proactive_suggestion_then_yes_stores_the_memory(family, talk, owner_client):
    conversation = _conversation(family)
    for said in ("Rose loved the lake house.", "She swam every summer.", "Her sister came too."):
        talk(conversation, said)
    body, _ = talk(conversation, "Alec is my boss by the way")
    assert body["reply"].startswith(QUESTION)
    summary = conversation.memories.filter(status="completed").latest("end_sequence")
    assert summary.end_sequence >= body["assistant_message"]["sequence"]

    body, _ = talk(conversation, "Yes")

    memory = _memory(family.owner)
    assert (memory.content, memory.category, memory.subject) == (
        "Alec is the user's boss", "person", "Alec")
    assert body["reply"].startswith("Noted — I'll remember that: Alec is the user's boss")


def test_offline_a_declined_suggestion_stores_nothing(family, talk):
    conversation = _conversation(family)
    body, _ = talk(conversation, "Her favourite colour was blue.")
    assert body["reply"].startswith(
        "Would you like me to remember that her favourite colour was blue?")

    body, _ = talk(conversation, "No, it's just for this chat")

    assert body["reply"].startswith("No problem, I won't store that.")
    assert not AgentMemory.objects.filter(user=family.owner).exists()


def test_offline_the_last_turns_reach_the_next_call_verbatim(family, talk, owner_client):
    conversation = _conversation(family)
    for said in ("Rose loved the lake house.", "She swam every summer.", "Her sister came too."):
        talk(conversation, said)
    summary = conversation.memories.filter(status="completed").latest("end_sequence")
    assert summary.end_sequence == 5  # the worker summarised every message

    context = owner_client.get(f"/api/ai/conversations/{conversation.pk}/context").json()

    replayed = context["messages"][1:]
    assert [m["role"] for m in replayed] == ["user", "assistant"] * 3
    assert [m["content"] for m in replayed[::2]] == [
        "Rose loved the lake house.", "She swam every summer.", "Her sister came too."]
    assert context["parts"]["raw_from_sequence"] == 0


def test_offline_a_later_correction_supersedes_the_fact(family, owner_client, archived):
    first, second = _conversation(family), _conversation(family)
    archived(first, "Rose married Tom in 1961.")
    archived(second, "Sorry, I got that wrong: Rose married Tom in 1962.")

    current = LegacyFact.objects.filter(user=family.owner, superseded_by__isnull=True)
    assert [fact.content for fact in current] == ["Rose married Tom in 1962."]
    response = owner_client.get(f"/api/ai/conversations/{_conversation(family).pk}/context")
    facts = [fact["content"] for fact in response.json()["parts"]["facts"]]
    assert facts == ["Rose married Tom in 1962."]
