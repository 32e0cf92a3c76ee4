"""A legacy named with a kinship word or a title ("Grandpa Joe", "Aunt Pearl", "Dr. Ruth Adams",
"Grandma"): the name after it is the person's, and the kinship word is a kinship alias
(docs/quality.md, "Legacies named with a kinship word or title")."""

import pytest

from conversations.models import Conversation
from conversations.services import summarization
from conversations.services.summarization import legacy_aliases
from facts.models import LegacyFact
from memory_site.core.ai.offline.provider import ExtractiveLLM
from memory_site.core.language.kinship import kinship_aliases
from memory_site.core.language.sentences import display_name
from tests.factories import ConversationFactory, import_messages
from tests.support.extraction import lines


def archived(name, *said):
    """The facts of one batch through the offline provider, with the aliases the pipeline
    passes for a legacy called `name`."""
    batch = lines(*said)
    names = legacy_aliases(name)
    kin = kinship_aliases([line.content for line in batch if line.role == "user"], name, names)
    result = ExtractiveLLM().summarize_and_extract(
        messages=batch, legacy_name=name, aliases=[*names, *kin])
    return [fact.content for fact in result.facts]


@pytest.mark.parametrize(("legacy_name", "written_as", "aliases"), [
    ("Grandpa Joe", "Joe", ["Joe", "Grandpa"]),
    ("Nana Rose", "Rose", ["Rose", "Nana"]),
    ("Aunt Pearl", "Pearl", ["Pearl", "Aunt"]),
    ("Uncle Bill Carter", "Bill", ["Bill", "Uncle"]),
    ("Dr. Ruth Adams", "Ruth", ["Ruth"]),
    ("Grandma", "Grandma", ["Grandma"]),
    ("Mom", "Mom", ["Mom"]),
    # A title before a family name alone is how the family calls her: no first name to use.
    ("Mrs. Okafor", "Mrs. Okafor", []),
    # A great-aunt is not "Aunt": her name only.
    ("Great Aunt Pearl", "Pearl", ["Pearl"]),
    # Before a name, a religious title; alone, a kinship word.
    ("Sister Mary", "Sister Mary", []),
    ("Father John Murphy", "John", ["John"]),
    ("Mother", "Mother", ["Mother"]),
    ("Rose Whitfield", "Rose", ["Rose"]),
    ('Margaret "Peggy" Olsen', "Margaret", ["Peggy", "Margaret"]),
    # A script without case is a name, not "no name follows".
    ("Uncle 李", "李", ["李", "Uncle"]),
])
def test_the_name_is_read_without_its_kinship_word_or_title(legacy_name, written_as, aliases):
    assert display_name(legacy_name) == written_as
    assert legacy_aliases(legacy_name)[:len(aliases)] == aliases
    assert not set(legacy_aliases(legacy_name)[len(aliases):]) & {"Grandpa", "Nana", "Aunt",
                                                                  "Uncle", "Dr.", "Mrs.",
                                                                  "Sister", "Father"}


def test_grandpa_joe_gets_the_facts_joe_murphy_gets():
    said = ("Joe was born in 1930 in Cork.", "He worked as a carpenter at the shipyard.")
    assert archived("Joe Murphy", *said) == [
        "Joe was born in 1930 in Cork.", "Joe worked as a carpenter at the shipyard."]
    assert archived("Grandpa Joe", *said) == archived("Joe Murphy", *said)


def test_grandpa_joe_by_name_and_by_kinship_word_and_not_his_relatives():
    assert archived(
        "Grandpa Joe",
        "Joe was born in 1930 in Cork.",
        "Grandpa loved hurling more than anything.",
        "My dad was a fisherman in Kinsale.",
        "Uncle Frank drove a bus in Dublin.",
    ) == ["Joe was born in 1930 in Cork.", "Joe loved hurling more than anything."]


def test_aunt_pearl():
    assert archived(
        "Aunt Pearl",
        "Pearl taught school in Savannah for forty years.",
        "My aunt Pearl never married.",
        "Mom was her younger sister and she was a nurse.",
        "Aunt Pearl grew camellias by the porch.",
    ) == ["Pearl taught school in Savannah for forty years.", "Pearl never married.",
          "Pearl grew camellias by the porch."]


def test_dr_ruth_adams():
    assert archived(
        "Dr. Ruth Adams",
        "Ruth Adams grew up in Ohio.",
        "Ruth was a pediatrician in Dayton for thirty years.",
        "Her husband Tom was a pharmacist.",
        "My dad was a mailman.",
    ) == ["Ruth grew up in Ohio.", "Ruth was a pediatrician in Dayton for thirty years."]


def test_uncle_bill_carter_by_full_name_first_name_and_kinship_word():
    assert archived(
        "Uncle Bill Carter",
        "Uncle Bill fixed tractors in Iowa.",
        "Bill Carter served in Korea.",
        "My dad was his younger brother.",
        "Bill loved polka.",
    ) == ["Bill fixed tractors in Iowa.", "Bill served in Korea.", "Bill loved polka."]


def test_mrs_okafor_is_written_with_her_title_and_mr_okafor_is_someone_else():
    assert archived(
        "Mrs. Okafor",
        "Mrs. Okafor taught maths at the girls' school in Enugu.",
        "Mr. Okafor was an engineer.",
        "She was born in 1941.",
        "Mrs Okafor loved highlife music.",
    ) == ["Mrs. Okafor taught maths at the girls' school in Enugu.",
          "Mrs. Okafor was born in 1941.", "Mrs. Okafor loved highlife music."]


def test_a_legacy_named_grandma_is_a_kinship_alias_without_a_first_name():
    assert archived(
        "Grandma",
        "Grandma was born in 1928 in Naples.",
        "She ran a bakery on Mulberry Street.",
        "My grandmother loved opera.",
        "My mom was a teacher.",
        "Grandpa Sal drove a cab.",
    ) == ["Grandma was born in 1928 in Naples.", "Grandma ran a bakery on Mulberry Street.",
          "Grandma loved opera."]


def test_a_legacy_named_grandma_never_stands_for_another_family():
    # "Grandma Ruth" is another grandmother, so no "Grandma" is the legacy here; "Mom" is
    # not her either, even as the only other family the user speaks of.
    said = ["Grandma Ruth sewed all our Halloween costumes.", "Mom was a nurse in Dayton."]
    assert kinship_aliases(said, "Grandma", legacy_aliases("Grandma")) == []
    assert archived("Grandma", *said) == []


def test_a_legacy_named_mom_files_moms_facts_and_not_dads():
    assert archived("Mom", "Mom was a nurse in Dayton.", "Dad fixed the dock every spring.",
                    "My mother loved the lake.") == [
        "Mom was a nurse in Dayton.", "Mom loved the lake."]


@pytest.mark.django_db
def test_the_pipeline_files_grandpa_joes_facts(family, settings):
    settings.SUMMARIZATION_BATCH_SIZE = 4
    settings.SUMMARIZATION_THRESHOLD = 2
    family.legacy.name = "Grandpa Joe"
    family.legacy.save(update_fields=["name"])
    conversation = ConversationFactory(legacy=family.legacy, user=family.owner)
    import_messages(conversation, (
        (role, content) for line in (
            "Joe was born in 1930 in Cork.",
            "My dad was a fisherman in Kinsale.",
            "Grandpa built boats in the shed.",
            "Uncle Frank drove a bus in Dublin.",
        ) for role, content in (("user", line), ("assistant", "Tell me more."))
    ), status=Conversation.Status.SHUTDOWN_CLEAN)
    summarization.conversation_catch_up(conversation=conversation)
    assert sorted(LegacyFact.objects.filter(source_conversation=conversation)
                  .values_list("content", flat=True)) == [
        "Joe built boats in the shed.", "Joe was born in 1930 in Cork."]
