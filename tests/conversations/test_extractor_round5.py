"""The offline extractor's fifth round of precision rules (issue 10, after families5 was scored
and became a dev set): a value corrected next with "wait"/"i mean" and a statement after it, a
value corrected inside the sentence without punctuation ("five sorry six"), a count restated in
a later session ("mam says she was one of twelve, I forgot …"), another person's clause after
", she/he" or after their name typed mid-sentence, and regional kinship words ("mam", "nain",
"oupa") (docs/quality.md, "Round 5")."""

import pytest

from memory_site.core.language.kinship import kinship_aliases
from tests.support.extraction import corrected, facts_of

# --- a value corrected next, then a statement -----------------------------------------------


def test_wait_and_a_bare_value_corrects_the_value_just_said():
    assert facts_of(
        "Rose drove a school bus in Akron for 21 years. Wait, 22, she always said 22.",
        name="Rose Whitfield",
    ) == ["Rose drove a school bus in Akron for 22 years."]


def test_wait_alone_is_no_correction():
    assert facts_of("Rose drove a school bus in Akron for 21 years. Wait till you hear this.",
                    name="Rose Whitfield") == ["Rose drove a school bus in Akron for 21 years."]


def test_a_value_before_a_comma_corrects_and_the_rest_is_its_own_statement():
    assert facts_of(
        ("assistant", "What did Rose do for work?"),
        "she nursed at the county hospital for 18 years. i mean 19, she started there in 1961",
        name="Rose Whitfield",
    ) == ["Rose nursed at the county hospital for 19 years.", "Rose started there in 1961."]


# --- a value corrected inside the sentence without punctuation -------------------------------


@pytest.mark.parametrize(("said", "filed"), [
    ("Rose was the youngest of seven sorry eight, we always forget baby tom",
     ["Rose was the youngest of eight."]),
    ("Rose was the second of four oops five", ["Rose was the second of five."]),
    ("Rose was the third of nine i mean ten", ["Rose was the third of ten."]),
])
def test_a_count_corrected_without_a_comma_keeps_the_new_value(said, filed):
    assert facts_of(said, name="Rose Whitfield") == filed


@pytest.mark.parametrize("said", [
    "Rose had five wait six grandchildren.",
    "Rose was the fourth no fifth of six.",
    "Rose worked there 30 actually 31 years.",
])
def test_a_correction_between_two_values_left_unresolved_files_nothing(said):
    assert facts_of(said, name="Rose Whitfield") == []


def test_sorry_between_words_that_are_not_values_still_files():
    assert facts_of("Rose never said sorry in her life.", name="Rose Whitfield") == [
        "Rose never said sorry in her life."]


# --- a count restated in a later session ------------------------------------------------------


def test_a_count_restated_with_a_marker_later_supersedes_the_known_one():
    assert corrected(
        ("assistant", "Welcome back. Last time we talked about Rose's farm."),
        "and my aunt says she was one of nine, I forgot the baby who died young.",
        name="Rose Whitfield", known=["Rose was one of eight children."],
    ) == [("Rose was one of nine children.", "f1")]


def test_a_duration_restated_with_a_marker_later_supersedes_the_known_one():
    assert corrected(
        ("assistant", "Welcome back, tell me more about Rose."),
        "Sorry, she was at the mill for 26 years.",
        name="Rose Whitfield", known=["Rose was at the mill for 24 years.",
                                      "Rose was born in 1931."],
    ) == [("Rose was at the mill for 26 years.", "f1")]


def test_a_value_in_another_frame_without_a_marker_supersedes_nothing():
    # Two different things counted: no marker, no correction.
    assert corrected(
        ("assistant", "Welcome back, tell me more about Rose."),
        "Rose had 9 grandchildren.",
        name="Rose Whitfield", known=["Rose had 3 children.", "Rose was at the mill for 24 years."],
    ) == [("Rose had 9 grandchildren.", None)]


# --- another person's clause ------------------------------------------------------------------


def test_a_she_clause_after_a_man_is_cut_from_his_fact():
    assert facts_of(
        "my grandad walter was a docker. he married nan in 1950, she was a cook at the infirmary",
        name="Walter Briggs",
    ) == ["Walter was a docker.", "Walter married nan in 1950."]


def test_a_she_clause_after_a_woman_stays():
    assert facts_of("Rose married in 1950, she was only nineteen.", name="Rose Whitfield") == [
        "Rose married in 1950, she was only nineteen."]


def test_another_named_relative_mid_sentence_starts_a_clause_of_their_own():
    assert facts_of(
        "my aunty mae lived next door.", "Rose was the cook in the family mae was the baker",
        name="Rose Whitfield",
    ) == ["Rose was the cook in the family."]


def test_a_name_after_a_kinship_word_mid_sentence_is_not_cut():
    assert facts_of("Rose looked after uncle jim when he was ill.", name="Rose Whitfield") == [
        "Rose looked after uncle jim when he was ill."]


# --- regional kinship words -------------------------------------------------------------------


@pytest.mark.parametrize(("said", "family"), [
    ("my mam was a cleaner at the school", "mam"),
    ("my nain ran the shop for years", "nain"),
    ("my oupa farmed near Bethlehem all his life", "oupa"),
])
def test_regional_kinship_words_stand_for_the_person(said, family):
    assert family in [word.lower() for word in kinship_aliases([said], "Rose Whitfield", ("Rose",))]


@pytest.mark.parametrize("feeling", ["😢", "❤️", "…", "🙏🙏"])
def test_a_message_of_no_words_announces_no_correction(feeling):
    """Found by a tester: "😢" alone made the next sentence a correction, and "Remember that
    grandma baked bread." replaced the filed fact with "Every Remember baked bread for the
    whole street." Emoji are ordinary in these conversations."""
    known = ["Every Sunday Rose baked bread for the whole street."]

    said = corrected(feeling, "Remember that grandma baked bread.", name="Rose Whitfield",
                     known=known)

    assert all(supersedes is None for _, supersedes in said)
