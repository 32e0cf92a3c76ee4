"""The offline extractor's second round of precision rules (issue 10, after the families sets
became dev sets): hedges as families type them, values corrected inside a sentence, a marker
said on its own before the correction, later retractions, "never" taken back by an exception
or contradicted in other words, the legacy's gender from how the user speaks of them, and
relatives a lower-case name or a shared name could turn into the legacy (docs/quality.md,
"Round 2")."""

import pytest

from memory_site.core.language.attributes import absolute_contradicted
from memory_site.core.language.kinship import kinship_aliases
from tests.support.extraction import corrected, facts_of

# --- hedges ---------------------------------------------------------------------------------


@pytest.mark.parametrize("hedged", [
    "Nell was spoilt by her brothers apparantly.",
    "Nell was spoilt by her brothers aparently.",
    "Nell supposedly sang at the Palladium.",
    "Nell thinks she mighta sung at the Palladium.",
    "Nell musta sung at the Palladium.",
    "They say Nell sang at the Palladium.",
])
def test_hedges_as_families_type_them_are_not_filed(hedged):
    assert facts_of("Nell grew sweet peas.", hedged, name="Nell Hart") == [
        "Nell grew sweet peas."]


# --- corrections inside a sentence ----------------------------------------------------------


@pytest.mark.parametrize(("said", "fact"), [
    ("Nell was in the land army, no sorry the wrens, the land army was her sister.",
     "Nell was in the wrens."),
    ("Nell sang alto, well soprano really, she always said alto.", "Nell sang soprano."),
    ("Nell was a typist no wait a telephonist.", "Nell was a telephonist."),
    ("Nell worked at the mill, sorry, the bakery.", "Nell worked at the bakery."),
])
def test_a_value_corrected_inside_the_sentence_keeps_only_the_new_value(said, fact):
    assert facts_of(said, name="Nell Hart") == [fact]


def test_sorry_and_well_without_a_correction_change_nothing():
    assert facts_of("Nell never once said sorry in her life.",
                    "Nell was well liked at the chapel.", name="Nell Hart") == [
        "Nell never once said sorry in her life.", "Nell was well liked at the chapel."]


# --- a marker on its own, "wasn't X, was Y", fragments after another subject ----------------


def test_a_marker_said_alone_makes_the_next_sentence_a_correction_of_a_known_fact():
    said = [("assistant", "Tell me more about Nell."),
            "Oh I need to fix something. She wasn't the eldest, she was the third of five."]
    assert corrected(*said, name="Nell Hart", known=["Nell was the eldest of five."]) == [
        ("Nell was the third of five.", "f1")]


def test_without_the_marker_the_same_sentence_still_corrects_by_its_negation():
    said = [("assistant", "Tell me more about Nell."),
            "Nell wasn't the eldest, she was the third of five."]
    assert corrected(*said, name="Nell Hart", known=["Nell was the eldest of five."]) == [
        ("Nell was the third of five.", "f1")]


def test_the_thing_was_y_not_x_corrects_the_value_after_a_marker():
    said = ["Nell was a cook at the Grand Hotel for 20 years.",
            "oh and correction the cook thing was 25 years not 20, my cousin just told me"]
    assert facts_of(*said, name="Nell Hart") == [
        "Nell was a cook at the Grand Hotel for 25 years."]


def test_an_it_was_clause_after_someone_elses_subject_corrects_a_known_count():
    said = ["Uncle Fred rang, and it was 8 children, not 7."]
    assert corrected(*said, name="Nell Hart", known=["Nell had 7 children."]) == [
        ("Nell had 8 children.", "f1")]


def test_they_married_with_a_two_digit_year_taken_back_corrects_the_wedding():
    said = ["found the certificate!! they married in 1949 not 48."]
    assert corrected(*said, name="Nell Hart",
                     known=["Nell married Dad in Hull in 1948.", "Nell was born in 1926."]) == [
        ("Nell married Dad in Hull in 1949.", "f1")]
    # A two-digit year that no fact holds corrects nothing.
    assert corrected(*said, name="Nell Hart", known=["Nell married Dad in Hull in 1950."]) == []


# --- retractions and "never" ----------------------------------------------------------------


def test_dunno_why_i_said_never_replaces_the_never_and_is_cut_from_the_fact():
    said = ["my nan nell never learned to drive, grandad did all the driving",
            "she drove the old morris everywhere, dunno why i said she never drove"]
    assert facts_of(*said, name="Nell Hart") == ["Nell drove the old morris everywhere."]


def test_an_exception_said_next_drops_the_never_before_it():
    said = ["Nell never missed a day at the mill.",
            "Well except 1953 when she had the twins.",
            "Nell never smoked."]
    assert facts_of(*said, name="Nell Hart") == ["Nell never smoked."]


@pytest.mark.parametrize(("old", "new", "contradicts"), [
    ("Nell never went back to Ireland.", "Nell went back once, in 1975.", True),
    ("Nell never went back to Ireland.", "Nell went to the shops every day.", False),
    ("Nell never left Hull her whole life.", "Nell lived in Leeds for two years.", True),
    ("Nell never left Hull her whole life.", "Nell lived in Hull all her life.", False),
    ("Nell never married.", "Nell married Bert Cole in 1950 but it only lasted a year.", True),
    ("Nell never drove.", "Nell drove the old morris everywhere, it was Bert who never did.",
     True),
])
def test_never_is_contradicted_in_other_words_and_only_then(old, new, contradicts):
    assert absolute_contradicted(new, old) is contradicts


def test_a_reply_before_the_comma_is_not_part_of_the_fact_and_never_married_is_replaced():
    said = ["no kids, she never married.",
            "funny, she married Bert Cole in 1950 but it only lasted a year, we never mention him"]
    assert facts_of(("assistant", "Did Nell have a family?"), *said, name="Nell Hart") == [
        "Nell married Bert Cole in 1950 but it only lasted a year."]


# --- who is the legacy ----------------------------------------------------------------------


def test_a_pronoun_of_the_other_gender_than_the_one_the_user_uses_is_not_the_legacy():
    said = [("assistant", "Did Arthur have hobbies?"),
            "chess, he played every sunday. vera was the one who sang, she had lessons as a girl"]
    assert facts_of(*said, name="Arthur Penn") == ["Arthur played every sunday."]


def test_a_lower_case_name_after_a_kinship_word_links_that_word_to_the_legacy():
    # "auntie nell": the aunt is Nell, so "my mom" is someone else.
    said = ["auntie nell was everything.", ("assistant", "What was Nell like?"),
            "she ran a chip shop in hull for 30 yrs",
            "she basically raised my mom, her baby sister. my mom was a teacher for 40 yrs"]
    assert kinship_aliases([s for s in said if isinstance(s, str)], "Nell Hart", ["Nell"]) == [
        "Auntie"]
    facts = facts_of(*said, name="Nell Hart")
    assert "Nell was a teacher for 40 yrs." not in facts
    assert facts == ["Nell ran a chip shop in hull for 30 yrs.",
                     "Nell basically raised my mom, her baby sister."]


def test_my_little_brother_with_his_name_in_lower_case_is_the_legacy_and_mom_is_not():
    said = ["my little brother danny died in 2004, he was 19",
            "our mom still keeps his room the same"]
    assert kinship_aliases(said, "Daniel Reyes", ["Danny", "Daniel"]) == ["Brother"]
    # Without the link, "our mom" was the only parent named and stood for Danny.
    assert facts_of(*said, name="Daniel Reyes") == ["Daniel died in 2004, he was 19."]


def test_a_name_put_after_two_different_kinship_words_is_a_shared_name():
    said = ["Nell was born in 1930.", "Nell, my sister, was born in 1961.",
            "Nell, my daughter, was the first of the grandkids."]
    assert kinship_aliases(said, "Nell Hart", ["Nell"]) == []
    assert facts_of(*said, name="Nell Hart") == ["Nell was born in 1930."]
    # One such apposition still ties the family to the legacy.
    assert kinship_aliases(["Nell, my mum, was born in 1930."], "Nell Hart", ["Nell"]) == [
        "Mum"]
