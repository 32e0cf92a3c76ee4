"""The archive pipeline passes the kinship words a conversation tied to the legacy, batch by batch."""

import pytest

from conversations.models import Conversation, ConversationChunk
from conversations.services import summarization
from facts.models import LegacyFact
from tests.factories import ConversationFactory, import_messages

pytestmark = pytest.mark.django_db


def closed_conversation(family, *user_lines):
    """A closed conversation of the owner about Rose Whitfield: each user line, then a reply."""
    conversation = ConversationFactory(legacy=family.legacy, user=family.owner)
    import_messages(conversation, (
        (role, content) for line in user_lines
        for role, content in (("user", line), ("assistant", "Tell me more."))
    ), status=Conversation.Status.SHUTDOWN_CLEAN)
    return conversation


def facts_by_batch(family, conversation):
    return sorted(
        (f.source_range_start, f.content)
        for f in LegacyFact.objects.filter(legacy=family.legacy, source_conversation=conversation)
    )


@pytest.fixture
def batches_of_four(settings):
    settings.SUMMARIZATION_BATCH_SIZE = 4
    settings.SUMMARIZATION_THRESHOLD = 2


def test_an_earlier_link_resolves_a_later_mom_batch_and_dad_stays_dad(family, batches_of_four):
    conversation = closed_conversation(
        family,
        "My mom, Rose, was a nurse in Dayton.",
        "Dad fixed the dock every spring.",
        # Second batch: only "Mom" and "Dad", which alone would be nobody.
        "Mom grew peonies by the back door.",
        "Dad worked at the steel mill in Toledo.",
    )
    result = summarization.conversation_catch_up(conversation=conversation)
    assert [(c.message_range_start, c.message_range_end) for c in result.chunks] == [(0, 4), (4, 8)]
    assert facts_by_batch(family, conversation) == [
        (0, "Rose was a nurse in Dayton."),
        (4, "Rose grew peonies by the back door."),
    ]
    assert summarization.conversation_names(conversation=conversation, end=4).aliases == ["Rose", "Mom"]


def test_without_a_link_mom_and_dad_give_no_fact_about_rose(family, batches_of_four):
    conversation = closed_conversation(
        family,
        "Mom was a nurse in Dayton.",
        "Dad fixed the dock every spring.",
        "Grandma Ruth sewed all our Halloween costumes.",
        "Rose loved the lake in summer.",
    )
    result = summarization.conversation_catch_up(conversation=conversation)
    assert len(result.chunks) == 2
    assert facts_by_batch(family, conversation) == [(4, "Rose loved the lake in summer.")]
    assert summarization.conversation_names(conversation=conversation, end=8).aliases == ["Rose"]


def test_a_batch_is_judged_on_what_the_user_said_up_to_its_end(family, batches_of_four):
    # When the first batch is archived the user has only said "Mom": Mom is the legacy then.
    # Dad arrives later and is never Rose; Mom stays unresolved from then on.
    conversation = closed_conversation(
        family,
        "Mom was a nurse in Dayton.",
        "Mom grew peonies by the back door.",
        "Dad worked at the steel mill in Toledo.",
        "Mom loved the lake in summer.",
    )
    assert summarization.conversation_names(conversation=conversation, end=4).aliases == ["Rose", "Mom"]
    assert summarization.conversation_names(conversation=conversation, end=8).aliases == ["Rose"]
    summarization.conversation_catch_up(conversation=conversation)
    assert facts_by_batch(family, conversation) == [
        (0, "Rose grew peonies by the back door."),
        (0, "Rose was a nurse in Dayton."),
    ]
    assert ConversationChunk.objects.filter(conversation=conversation).count() == 2


def test_once_the_user_calls_her_rose_dad_and_mom_are_not_rose(family, batches_of_four):
    # The review's case: "Dad worked at the steel mill" used to be filed as Rose's. The first
    # batch, said before the name, keeps its Mom facts.
    conversation = closed_conversation(
        family,
        "Mom was a nurse in Dayton.",
        "Mom grew peonies by the back door.",
        "Rose loved gardening.",
        "Dad worked at the steel mill for thirty years.",
    )
    assert summarization.conversation_names(conversation=conversation, end=4).aliases == ["Rose", "Mom"]
    assert summarization.conversation_names(conversation=conversation, end=8).aliases == ["Rose"]
    summarization.conversation_catch_up(conversation=conversation)
    assert facts_by_batch(family, conversation) == [
        (0, "Rose grew peonies by the back door."),
        (0, "Rose was a nurse in Dayton."),
        (4, "Rose loved gardening."),
    ]

