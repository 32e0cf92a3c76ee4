"""The offline extractor's fourth round of precision rules (issue 10, after families4 was scored
and became a dev set): "never" about going anywhere is not filed, counterfactuals and wishes
are hedges, a noun taken back ("she wasn't a nurse, she was …", "…, not a nurse") corrects the
fact that said it in a later session, "one thing, I said X last time but …", step- and
half-relatives, a short form of the name typed after a kinship word, and "62, no 63" left
unresolved (docs/quality.md, "Round 4")."""

import pytest

from memory_site.core.language.attributes import mobility_absolute
from memory_site.core.language.kinship import kinship_aliases
from tests.support.extraction import corrected, facts_of

# --- "never" about going anywhere -------------------------------------------------------------


@pytest.mark.parametrize("said", [
    "she never left ireland in her life",
    "Rose never learned to drive either, the bus everywhere.",
    "she never left ohio basically. scared of flying",
    "Rose never got on a plane again after the war.",
    "Rose never lived anywhere but Boston.",
    "Rose always lived in the same house on Elm Street.",
    "Rose never went back to Jamaica.",
])
def test_a_never_about_going_anywhere_is_not_filed(said):
    assert facts_of(("assistant", "Tell me about Rose."), said, name="Rose Whitfield") == []


@pytest.mark.parametrize("said", [
    "Rose never missed a game.",
    "Rose never married.",
    "Rose never went to church.",
    "Rose never left her side.",
    "Rose never left the house without lipstick.",
    "Rose never liked travelling.",
])
def test_other_nevers_are_still_filed(said):
    assert mobility_absolute(said) is False
    assert facts_of(said, name="Rose Whitfield") == [said]


def test_the_journey_that_contradicts_an_unfiled_never_is_filed_and_an_exception_drops_nothing():
    assert facts_of("Rose never missed mass.", "Rose never left Cork.",
                    "Well, except 1982 when she went to Lourdes.",
                    "Rose went to Lourdes in 1982.", name="Rose Whitfield") == [
        "Rose never missed mass.", "Rose went to Lourdes in 1982."]


# --- counterfactuals and wishes ----------------------------------------------------------------


@pytest.mark.parametrize("said", [
    "she'd have been 86 this year",
    "Rose would of loved the grandkids.",
    "Rose'd have spoiled her rotten.",
    "she'd be 86 this year",
    "Rose wanted to be a singer.",
    "Rose always wanted to see Rome.",
    "Had she lived she'd be 90.",
])
def test_counterfactuals_and_wishes_file_nothing(said):
    assert facts_of(("assistant", "Tell me about Rose."), said, name="Rose Whitfield") == []


def test_would_have_as_a_habit_is_still_a_fact():
    assert facts_of("Rose'd have a sherry every Friday night.", name="Rose Whitfield") == [
        "Rose'd have a sherry every Friday night."]


# --- a noun taken back corrects the fact that said it -------------------------------------------


def test_a_noun_taken_back_in_a_later_session_supersedes_the_fact_that_said_it():
    known = ("Deborah adopted me from korea in 1987.",
             "Deborah was a nurse at St Vincent's, nights mostly.")
    assert corrected(("assistant", "Would you like to keep telling me about Deb?"),
                     "yeah. so correction, she wasnt technically a nurse, she was a respiratory "
                     "therapist. people always said nurse and she'd get so annoyed",
                     name="Deborah Kowalczyk", known=known) == [
        ("Deborah was a respiratory therapist at St Vincent's, nights mostly.", "f2")]
    assert corrected("Deborah was a respiratory therapist, not a nurse.",
                     name="Deborah Kowalczyk", known=known) == [
        ("Deborah was a respiratory therapist at St Vincent's, nights mostly.", "f2")]


def test_a_noun_taken_back_in_the_batch_replaces_the_fact_and_one_no_fact_holds_is_new():
    assert facts_of("Rose was a nurse at the Mater.", "Rose loved dahlias.",
                    "Rose wasn't a nurse, she was a midwife.", name="Rose Whitfield") == [
        "Rose was a midwife at the Mater.", "Rose loved dahlias."]
    assert corrected("Rose was a midwife, not a nurse.", name="Rose Whitfield",
                     known=("Rose loved dahlias.",)) == [("Rose was a midwife.", None)]


def test_i_said_x_last_time_after_a_lead_in_corrects_the_known_fact():
    known = ("Siobhán was a nurse, ICU nurse in the Mater in dublin for years and years.",)
    assert corrected(("assistant", "What would you like to add about Siobhán?"),
                     "hiya. one thing, i said the Mater last time but it was Beaumont she was "
                     "in, the Mater was where she trained.",
                     name="Siobhán Ní Bhriain", known=known) == [
        ("Siobhán was a nurse, ICU nurse in the Beaumont in dublin for years and years.",
         "f1")]


# --- who: step-relatives and a short form after a kinship word ----------------------------------


def test_a_step_relative_is_a_family_of_its_own():
    said = ["my stepmum lorraine was a hairdresser.", "dad was a welder."]
    assert kinship_aliases(said, "Lorraine Kettle", ["Lorraine"]) == ["Stepmum"]
    assert facts_of(*said, name="Lorraine Kettle") == ["Lorraine was a hairdresser."]


def test_a_short_form_typed_after_a_kinship_word_is_the_person_so_mum_is_not():
    said = ["my stepbrother cal. he was a sparky.", "my mum married his dad in 2008."]
    assert kinship_aliases(said, "Callum Reid", ["Callum"]) == ["Stepbrother"]
    assert facts_of(("assistant", "Who would you like to tell me about?"), *said,
                    name="Callum Reid") == ["Callum was a sparky."]


# --- a value corrected with a bare "no" --------------------------------------------------------


def test_a_number_corrected_with_a_bare_no_inside_the_sentence_files_nothing():
    assert facts_of("Rose ran the half marathon at 62, no 63, the year after her hip.",
                    name="Rose Whitfield") == []
