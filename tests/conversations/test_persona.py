"""A persona is limited in tokens when it is set, and a persona that does not fit the budget
(an older row, a budget lowered later) is cut in the context instead of failing every turn."""

from datetime import UTC, datetime

import pytest
from django.test import Client

from conversations.context import build_context, total_tokens
from conversations.models import Conversation, Message
from conversations.prompt import DATETIME_PREFIX, PERSONA_INSTRUCTIONS
from conversations.services import conversation_create, message_append
from memory_site.core.ai import count_tokens
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 14, 9, 26, 53, tzinfo=UTC)
# 1,300 tokens in 3,900 characters: within PERSONA_MAX_CHARS, over PERSONA_MAX_TOKENS.
LONG_PERSONA = "ab " * 1300


def test_a_persona_over_persona_max_tokens_is_a_400_and_nothing_is_written(family, owner_client):
    assert len(LONG_PERSONA.strip()) < 4000 and count_tokens(LONG_PERSONA.strip()) > 1000
    response = owner_client.post("/api/ai/conversations", {
        "legacy_id": str(family.legacy.pk), "persona": LONG_PERSONA,
    }, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "detail": "persona: At most 1000 tokens.", "code": "invalid",
        "errors": {"persona": ["At most 1000 tokens."]},
    }
    assert not Conversation.objects.exists()


def test_persona_max_tokens_is_a_setting_and_the_limit_itself_is_allowed(family, settings):
    settings.PERSONA_MAX_TOKENS = 5
    conversation = conversation_create(user=family.owner, legacy=family.legacy,
                                       persona="ab ab ab ab ab")
    assert count_tokens(conversation.persona) == 5
    with pytest.raises(Exception, match="At most 5 tokens"):
        conversation_create(user=family.owner, legacy=family.legacy, persona="ab ab ab ab ab ab")
    assert Conversation.objects.count() == 1


@pytest.fixture
def long_persona(family):
    """A conversation whose persona was saved before the token limit, far over the budget."""
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy,
                                       persona="Speak gently. " + "ab " * 3000)
    message_append(conversation=conversation, role="user", content="Tell me about Rose.")
    return conversation


def test_a_persona_that_alone_does_not_fit_is_cut_with_a_warning(long_persona, settings):
    settings.CONTEXT_TOKEN_BUDGET = 1500
    packet = build_context(conversation=long_persona, now=NOW)

    chat = packet.chat_messages()
    assert total_tokens(chat) <= 1500
    prompt = chat[0]["content"]
    # Never cut: the instructions and the date-time line; the latest message stays whole.
    assert PERSONA_INSTRUCTIONS in prompt
    assert f"{DATETIME_PREFIX}2026-03-14T09:26:53Z (UTC)" in prompt
    assert chat[-1] == {"role": "user", "content": "Tell me about Rose."}
    # The persona keeps its beginning, inside its fence.
    assert "<persona>\nSpeak gently. ab ab" in prompt and "</persona>" in prompt
    [cut] = packet.cuts
    assert cut["part"] == "persona"
    assert cut["item"]["tokens"] == count_tokens("Speak gently. " + "ab " * 2999 + "ab")
    assert 0 < cut["item"]["kept_tokens"] < cut["item"]["tokens"]
    assert packet.warnings == [
        f"The persona ({cut['item']['tokens']} tokens) does not fit CONTEXT_TOKEN_BUDGET=1500: "
        f"only its first {cut['item']['kept_tokens']} tokens were used."
    ]
    # As much as fits: one more token of persona would be over the budget.
    assert total_tokens(chat) > 1500 - 10


def test_a_persona_is_left_out_when_the_latest_message_leaves_no_room(long_persona, settings):
    instructions_only = build_context(
        conversation=ConversationFactory(user=long_persona.user, legacy=long_persona.legacy),
        now=NOW,
    )
    settings.CONTEXT_TOKEN_BUDGET = instructions_only.token_counts()["total"] + 12
    packet = build_context(conversation=long_persona, now=NOW)

    assert total_tokens(packet.chat_messages()) <= settings.CONTEXT_TOKEN_BUDGET
    assert "<persona>" not in packet.system_prompt
    assert PERSONA_INSTRUCTIONS in packet.system_prompt
    assert packet.cuts[0]["part"] == "persona"
    assert packet.cuts[0]["item"]["kept_tokens"] == 0
    assert packet.warnings[0].endswith(": it was left out.")


def test_a_persona_that_fits_alone_is_kept_and_the_long_message_is_cut(family, settings):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy,
                                       persona="Speak gently and slowly.")
    message_append(conversation=conversation, role="user",
                   content="Rose kept bees behind the lake house. " * 300)
    settings.CONTEXT_TOKEN_BUDGET = 1500
    packet = build_context(conversation=conversation, now=NOW)

    assert "<persona>\nSpeak gently and slowly.\n</persona>" in packet.system_prompt
    assert [cut["part"] for cut in packet.cuts] == ["session_state", "latest_message"]
    assert packet.warnings == []
    assert total_tokens(packet.chat_messages()) <= 1500


def test_a_long_persona_no_longer_breaks_context_turn_or_chat_page(family, owner_client,
                                                                   long_persona, settings):
    settings.CONTEXT_TOKEN_BUDGET = 1500
    context = owner_client.get(f"/api/ai/conversations/{long_persona.pk}/context")
    assert context.status_code == 200
    assert context.json()["cuts"][0]["part"] == "persona"
    assert context.json()["warnings"][0].startswith("The persona (")

    turn = owner_client.post(f"/api/ai/conversations/{long_persona.pk}/turn",
                             {"content": "What did she grow?"}, format="json")
    assert turn.status_code == 201
    assert "persona" in [cut["part"] for cut in turn.json()["cuts"]]
    assert Message.objects.filter(conversation=long_persona, role="assistant").count() == 1

    browser = Client()
    browser.force_login(family.owner)
    page = browser.get(f"/chat/{long_persona.pk}")
    assert page.status_code == 200
    assert "The persona (" in page.content.decode()
