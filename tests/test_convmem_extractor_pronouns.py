"""The offline extractor never saves a fact whose object is a pronoun that points at nothing."""

import pytest

from memory_site.core.ai import TranscriptLine
from memory_site.core.ai.extractive import extract_facts, kinship_aliases


def facts_of(*pairs, aliases=("Rose",)):
    """Facts of one batch, with the kinship aliases the pipeline would pass for it."""
    lines = [TranscriptLine(sequence=i, role=role, content=text)
             for i, (role, text) in enumerate(pairs)]
    kin = kinship_aliases([text for role, text in pairs if role == "user"], "Rose Whitfield",
                          aliases)
    return [(f.category, f.content)
            for f in extract_facts(lines, "Rose Whitfield", [*aliases, *kin])]


def test_them_after_a_kind_is_the_kind_in_the_plural():
    assert facts_of(
        ("assistant", "What did your mother love?"),
        ("user", "Her favorite flower was the peony. She grew them by the back door."),
        aliases=("Rose", "Mom"),  # as an earlier batch's "my mom, Rose" establishes
    ) == [("preference", "Rose's favorite flower was the peony."),
          ("hobby", "Rose grew peonies by the back door.")]


@pytest.mark.parametrize(
    "pairs",
    [
        [("assistant", "Tell me more?"), ("user", "Mom grew them by the back door.")],
        [("user", "Mom got up at five. She did that every morning until she retired.")],
        # The shutters come after the pronoun; only the sentence before it counts.
        [("user", "Mom painted them every spring. We had shutters on the old house.")],
        # "Not a word." names nothing that "it" could be.
        [("assistant", "Did she speak English?"),
         ("user", "Not a word. Mom learned it from the radio.")],
    ],
    ids=["no-antecedent", "an-event-not-a-thing", "antecedent-after", "negated"],
)
def test_an_unresolved_object_pronoun_drops_the_sentence(pairs):
    contents = [content for _, content in facts_of(*pairs)]
    assert not any(
        word in content.lower().split() for content in contents
        for word in ("them", "it", "that")
    )
    assert contents == (["Rose got up at five."] if "five" in pairs[0][1] else [])


def test_it_points_at_the_thing_in_the_previous_sentence_even_the_assistants():
    assert facts_of(
        ("assistant", "Did Rose keep a diary?"),
        ("user", "She kept it in a tin box under her bed."),
        ("user", "Dad bought her a red Chevy in 1958. She drove it to church every Sunday."),
    ) == [("other", "Rose kept the diary in a tin box under her bed."),
          ("habit", "Rose drove the red Chevy to church every Sunday.")]


def test_it_as_a_dummy_subject_and_that_as_a_conjunction_are_not_objects():
    assert facts_of(
        ("user", "Mom made sure it was spotless every Sunday."),
        ("user", "Mom knew that he would come back."),
    ) == [("habit", "Rose made sure it was spotless every Sunday."),
          ("other", "Rose knew that he would come back.")]


def test_a_fact_about_the_person_may_mention_the_user():
    # The seed's rule is "facts about the legacy person, not about the user themselves":
    # Rose teaching is about Rose; the user learning on their own is not.
    assert facts_of(
        ("user", "Mom taught me to play the piano when I was six."),
        ("user", "I played the piano at her funeral."),
    ) == [("relationship", "Rose taught me to play the piano when I was six.")]
