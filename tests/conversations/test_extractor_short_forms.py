"""The offline extractor after the families set (issue 10): the legacy's short first names from
the nickname table, counts and ordinals corrected later, "never" paired only when it is the
same thing, and the recall rules for text typed the way families type (docs/quality.md)."""

import pytest

from conversations.services.summarization import legacy_aliases
from memory_site.core.ai.offline.facts import extract_facts
from memory_site.core.language.attributes import absolute_contradicted
from memory_site.core.language.names import short_forms
from tests.support.extraction import corrected, facts_of, lines, quality_report

# --- short forms of the legacy's first name -------------------------------------------------


def test_short_forms_come_from_the_table_both_ways_and_only_when_unambiguous():
    assert short_forms(["Eugene"]) == ["Gene"]
    assert short_forms(["Gene"]) == ["Eugene"]
    # "Glo" is not in the table (it has "Glory"); "Hal" is Harold, Henry or Howard: none.
    assert "Glo" not in short_forms(["Gloria"])
    assert short_forms(["Hal"]) == []
    # Other names the table lists are not short forms: Peter for Patrick, Wilma or Will for
    # William, Cassandra for Sandra; a kinship alias expands to nothing.
    assert short_forms(["Patrick"]) == ["Paddy", "Pat", "Patsy"]
    assert short_forms(["William"]) == ["Bela", "Bill", "Billy", "Willie", "Willy"]
    assert short_forms(["Sandra"]) == []
    assert short_forms(["Nana"]) == []


def test_the_pipeline_aliases_add_the_short_forms_of_the_legacys_names_only():
    assert legacy_aliases("Eugene Farrell") == ["Eugene", "Gene"]
    assert legacy_aliases('Margaret "Peggy" Doyle')[:4] == ["Peggy", "Margaret", "Daisy", "Gretta"]
    assert "Maggie" in legacy_aliases('Margaret "Peggy" Doyle')
    assert legacy_aliases("Rose Whitfield") == ["Rose"]


def test_a_short_form_names_the_person_and_links_their_kinship_word():
    assert facts_of("Gene worked as a postman for 35 years.", name="Eugene Farrell") == [
        "Eugene worked as a postman for 35 years."]
    # "Grandpa Hal" is Harold: Grandpa is him, not another person's title.
    assert facts_of("Grandpa Hal never drank tea, only black coffee.",
                    "Grandpa ran a garage on Route 9.", name="Harold Briggs") == [
        "Harold never drank tea, only black coffee.", "Harold ran a garage on Route 9."]
    # Without the table's short form, "Gene" is someone else.
    assert extract_facts(lines("Gene worked as a postman for 35 years."), "Eugene Farrell",
                         ["Eugene"]) == []


def test_a_relative_whose_name_is_a_short_form_never_becomes_the_legacy():
    # About Rose, "Uncle Gene" is another person; only Rose's own names expand.
    assert facts_of("my mom Rose was born in Scranton in 1940.",
                    "Uncle Gene was her big brother. Gene drove a truck for Mack.",
                    "Gene taught her to fish.", name="Rose Kowalski") == [
        "Rose was born in Scranton in 1940."]


def test_a_correction_under_a_short_form_supersedes_a_fact_filed_under_the_full_name():
    assert corrected("Actually Gene was the fourth of six, not the third.",
                     known=("Eugene was the third of six boys.",), name="Eugene Farrell") == [
        ("Eugene was the fourth of six boys.", "f1")]


# --- counts and ordinals said again in a later batch or session ----------------------------


def test_counts_of_siblings_and_grandchildren_supersede_and_other_counts_do_not():
    assert corrected("Frank had four brothers, I forgot Uncle Vinny.",
                     known=("Francis had three brothers and two sisters.",),
                     name="Francis Byrne") == [
        ("Francis had four brothers and two sisters.", "f1")]
    assert corrected("Dot had 10 grandchildren.", known=("Dorothy had 9 grandkids.",),
                     name="Dorothy Pike") == [("Dorothy had 10 grandchildren.", "f1")]
    # "and two dogs" is no count of a relative: nothing to compare.
    assert corrected("Rose had three sons and two dogs.", known=("Rose had three sons and one dog.",),
                     name="Rose Whitfield") == [("Rose had three sons and two dogs.", None)]


def test_an_ordinal_said_through_a_relative_in_a_later_session_supersedes():
    assert corrected("mum says Ted was the fourth of five, auntie Joan came after him.",
                     known=("Edward was the youngest of five.",), name="Edward Lang") == [
        ("Edward was the fourth of five.", "f1")]
    assert corrected("yes. I need to fix something, Bill had five kids not four, our brother "
                     "Michael died when he was two.",
                     known=("William had four kids.",), name="William Harper") == [
        ("William had five kids.", "f1")]


# --- "never" paired only with the same thing ------------------------------------------------


@pytest.mark.parametrize(("new", "old"), [
    ("Harold drank coffee by the gallon.", "Harold never drank tea, only black coffee."),
    ("Harold missed my wedding in 1988.", "Harold never missed a Browns game on the radio."),
    ("Jean missed the bus to Oban the day she met my grandad.",
     "Jean never missed a Sunday at the kirk."),
    ("Jean drove us all mad singing hymns.", "Jean never drove, Grandad did all the driving."),
])
def test_a_true_never_is_not_contradicted_by_the_same_verb_about_something_else(new, old):
    assert absolute_contradicted(new, old) is False


@pytest.mark.parametrize(("new", "old"), [
    ("Gloria drove us to school every day in that Buick.", "Gloria never learned to drive."),
    ("Walter flew to Krakow in 1975.", "Walter never set foot on a plane."),
    ("Bridie missed months of work that year.", "Bridie never missed a day at the bakery."),
    ("Harold drank tea with the vicar every Sunday.", "Harold never drank tea."),
])
def test_a_never_is_contradicted_by_the_same_thing_done(new, old):
    assert absolute_contradicted(new, old) is True


def test_a_true_never_stays_current_in_a_later_batch():
    assert corrected("Hal missed my wedding in 1988 because of his hip operation.",
                     known=("Harold never missed a Browns game on the radio.",),
                     name="Harold Briggs") == [
        ("Harold missed my wedding in 1988 because of his hip operation.", None)]


# --- text as families type it ---------------------------------------------------------------


def test_lower_case_sentences_and_a_second_clause_about_the_person_are_facts():
    assert facts_of("mum was a legend. she worked at the servo for yonks. she loved the footy "
                    "and she went for the Swans no matter what lol",
                    name="Sandra Kelly") == [
        "Sandra was a legend.", "Sandra worked at the servo for yonks.",
        "Sandra loved the footy.", "Sandra went for the Swans no matter what lol."]
    # "and she" after someone else opens the sentence is about that someone.
    assert facts_of(("assistant", "Tell me about Rose."),
                    "I rang my mam and she put me right.", name="Rose Whitfield") == []


def test_who_the_person_is_and_another_subjects_clause_are_not_filed():
    assert facts_of("My dad was William Harper, everyone called him Bill.",
                    name="William Harper") == []
    assert facts_of("Joe had four kids, my aunt Lucia was born after the bakery opened.",
                    name="Joseph Russo") == ["Joseph had four kids."]
    assert facts_of("Peggy was the second of eight, Uncle Tom was the eldest.",
                    name="Margaret Doyle") == ["Margaret was the second of eight."]


def test_the_third_corrections_dev_set_files_nothing_it_must_not():
    report = quality_report("extractor_corrections_dev3")
    assert report.wrongly_filed == [] and report.malformed == []
    assert report.precision >= 0.95, report.spurious
    assert report.recall >= 0.8, report.misses
