"""The offline extractor's third round of precision rules (issue 10, after families3 was scored
and became a dev set): counts and ordinals corrected in the next sentence, a value doubted or
corrected by a bare "or was it 39?" / "well seven" / "make that 1962", a second subject typed
without punctuation, a reply whose subject is another person, a parent named only as the way
to a grandparent, the legacy's name typed in lower case, unplanned or unrealised events, jokes,
and corrections left unresolved inside a sentence (docs/quality.md, "Round 3")."""

import pytest

from memory_site.core.language.kinship import kinship_aliases
from tests.support.extraction import corrected, facts_of

# --- a count or an ordinal corrected in the next sentence -----------------------------------


@pytest.mark.parametrize(("said", "fact"), [
    (("he was eldest of six. sorry seven, one small brother died as a baby",),
     "Ramesh was eldest of seven."),
    (("Ramesh was the second of four boys. Actually, the third; I always forget Vijay.",),
     "Ramesh was the third of four boys."),
    (("Ramesh was the eldest of six.", "sorry, seven"), "Ramesh was the eldest of seven."),
    (("Ramesh was the eldest of six. well seven", ), "Ramesh was the eldest of seven."),
    (("Ramesh joined the railway in 1961. Make that 1962.",),
     "Ramesh joined the railway in 1962."),
])
def test_a_count_or_ordinal_corrected_next_keeps_only_the_new_value(said, fact):
    assert facts_of(("assistant", "Tell me about Ramesh."), *said, name="Ramesh Iyer") == [fact]


def test_a_correction_fragment_takes_its_value_from_its_head_not_from_what_follows():
    # "Aunt Linda" after the semicolon is not the value: "Lake Superior" stays.
    assert facts_of(
        "Deborah loved Lake Superior.",
        "Deborah was the second of four girls. Actually, the third; I always forget that "
        "Aunt Carol is older than Aunt Linda.", name="Deborah Klein") == [
        "Deborah loved Lake Superior.", "Deborah was the third of four girls."]


@pytest.mark.parametrize("doubt", ["or was it 39?", "Or 1939?", "or maybe 39"])
def test_a_value_doubted_next_drops_the_fact_that_holds_it(doubt):
    assert facts_of("Nomvula grew dahlias.", f"Nomvula was born in 1938. {doubt}",
                    name="Nomvula Dlamini") == ["Nomvula grew dahlias."]


def test_or_opening_a_statement_is_no_doubt():
    assert facts_of("Nomvula was born in 1938.", "Or she would bake on Sundays, she said.",
                    name="Nomvula Dlamini")[0] == "Nomvula was born in 1938."


# --- two clauses typed without punctuation --------------------------------------------------


@pytest.mark.parametrize(("said", "fact"), [
    ("he did the cooking i did the money", "Marcus did the cooking."),
    ("he ran the truck we handled the bookings", "Marcus ran the truck."),
    ("he fixed the engines they did the paintwork", "Marcus fixed the engines."),
])
def test_a_new_subject_without_punctuation_starts_its_own_clause(said, fact):
    assert facts_of(("assistant", "Tell me about Marcus."), said, name="Marcus Delgado") == [
        fact]


def test_the_users_clause_then_his_is_split_too():
    assert facts_of(("assistant", "Tell me about Marcus."), "i did the money he did the cooking",
                    name="Marcus Delgado") == ["Marcus did the cooking."]


@pytest.mark.parametrize("said", [
    "he was there the day i was born",
    "he still had the car we bought in 1990",
    "he always said i was his favourite",
    "it was 1967 they married",
])
def test_a_subject_inside_the_clause_does_not_split_it(said):
    facts = facts_of(("assistant", "Tell me about Marcus."), f"Marcus told me, {said}.",
                     name="Marcus Delgado")
    assert len(facts) <= 1 and not any(f.endswith((" day.", " car.", " said.")) for f in facts)


def test_the_day_he_was_born_stays_whole():
    assert facts_of("Marcus was there the day i was born.", name="Marcus Delgado") == [
        "Marcus was there the day i was born."]


def test_a_hedge_covers_the_clause_after_it():
    assert facts_of(("assistant", "Tell me about George."),
                    "i think maybe he wanted to join the navy but his mother wouldnt sign",
                    name="George Finch") == []


# --- replies about another person -----------------------------------------------------------


def test_a_named_reply_to_the_question_is_that_persons():
    assert facts_of(
        ("assistant", "Did anyone follow Nomvula into nursing?"),
        "Thandi did, she's a nurse at Helen Joseph now.",
        "Nomvula sang alto in the choir.", name="Nomvula Dlamini") == [
        "Nomvula sang alto in the choir."]


def test_a_parent_named_as_the_way_to_a_grandparent_is_not_the_grandparent():
    said = ["she was my gogo, my moms mom. she raised me in Orlando East",
            "my mom did, shes a nurse at Helen Joseph now"]
    assert kinship_aliases(said, "Nomvula Dlamini", ["Nomvula"]) == []
    facts = facts_of(("assistant", "Tell me about Nomvula."), said[0],
                     ("assistant", "Did anyone follow her into nursing?"), said[1],
                     name="Nomvula Dlamini")
    assert "Nomvula raised me in Orlando East." in facts
    assert not [fact for fact in facts if "nurse" in fact]


def test_mom_alone_is_still_the_person():
    assert kinship_aliases(["my mom was a nurse", "mom grew roses"], "Rose Whitfield",
                           ["Rose"]) == ["Mom"]


def test_the_name_in_lower_case_stops_dad_standing_for_the_person():
    said = ["cal was my twin, he was born 4 mins before me",
            "dad had a mango farm out the back of town"]
    assert kinship_aliases(said, "Callum Reid", ["Callum", "Cal"]) == []
    assert facts_of(*said, name='Callum "Cal" Reid') == []


# --- hedges, jokes and corrections left unresolved ------------------------------------------


@pytest.mark.parametrize("said", [
    "Lily wouldve been amazing at whatever honestly.",
    "Lily would've loved the museum.",
    "Lily was gonna be a dino doctor.",
    "Lily and Sam were going to get married in April.",
    "Lily was born in 2015 or was it 2016.",
    "Lily said she saw a ghost, she was winding us up.",
    "Lily was 21 forever jk.",
])
def test_unrealised_doubted_or_joking_statements_are_not_filed(said):
    assert facts_of("Lily loved dinosaurs.", said, name="Lily Brown") == ["Lily loved dinosaurs."]


def test_lol_alone_does_not_drop_a_true_statement():
    assert facts_of("Lily loved dinosaurs lol.", name="Lily Brown") == ["Lily loved dinosaurs lol."]


@pytest.mark.parametrize("said", [
    "Seamus played the bodhran every friday, no thursday sorry, friday the boat was out.",
    "Seamus loved the Treorchy choir, no not Treorchy, Dowlais.",
    "Seamus was born in 48 no 49 in salford.",
    "Seamus grew leeks on his allotment, well onions mostly, the leeks never took.",
])
def test_a_correction_left_inside_a_sentence_files_nothing(said):
    assert facts_of("Seamus fished out of Killybegs.", said, name="Seamus Byrne") == [
        "Seamus fished out of Killybegs."]


def test_sorry_as_a_word_is_no_correction():
    assert facts_of("Seamus never once said sorry in his life.", name="Seamus Byrne") == [
        "Seamus never once said sorry in his life."]


def test_a_count_corrected_in_a_later_batch_supersedes_the_known_fact():
    assert corrected("sorry, seven", name="Ramesh Iyer",
                     known=["Ramesh was the eldest of six."]) == [
        ("Ramesh was the eldest of seven.", "f1")]
