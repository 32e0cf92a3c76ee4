"""The offline extractor: kinship words (which one means the legacy, and who everyone else is),
and never a fact whose object is a pronoun that points at nothing."""

import pytest

from memory_site.core.ai import TranscriptLine
from memory_site.core.ai.offline.facts import extract_facts
from memory_site.core.language.kinship import kinship_aliases

ROSE = "Rose Whitfield"


def lines(*said):
    """User messages, or (role, text) pairs."""
    pairs = [s if isinstance(s, tuple) else ("user", s) for s in said]
    return [TranscriptLine(sequence=i, role=role, content=text)
            for i, (role, text) in enumerate(pairs)]


def kin_of(*said, name=ROSE, aliases=("Rose",)):
    return kinship_aliases([line.content for line in lines(*said) if line.role == "user"],
                           name, aliases)


def facts_of(*said, name=ROSE, aliases=("Rose",)):
    """One batch's facts, with the kinship aliases the pipeline computes for it."""
    return [f.content for f in extract_facts(lines(*said), name,
                                             [*aliases, *kin_of(*said, name=name, aliases=aliases)])]


# --- the walkthrough's sentences ------------------------------------------------------------


def test_dad_and_grandma_ruth_never_become_rose():
    assert facts_of(
        "My mom, Rose, was a nurse in Dayton.",
        "Dad fixed the dock every spring.",
        "Dad worked at the steel mill in Toledo.",
        "Grandma Ruth sewed all our Halloween costumes.",
        "Mom grew peonies by the back door.",
    ) == ["Rose was a nurse in Dayton.", "Rose grew peonies by the back door."]


@pytest.mark.parametrize("said", [
    "Dad fixed the dock every spring.",
    "Dad worked at the steel mill in Toledo.",
    "Grandma Ruth sewed all our Halloween costumes.",
])
def test_each_sentence_alone_is_not_a_fact_about_rose_even_when_mom_is_given(said):
    assert facts_of(said, aliases=("Rose", "Mom")) == []


# --- rule 1: a kinship word with another name is another person ------------------------------


def test_grandma_ruth_is_the_legacy_only_when_the_legacy_is_ruth():
    said = ("Grandma Ruth sewed all our Halloween costumes.",
            "Grandpa Joe fixed cars in Akron.",
            "Grandma was a nurse in Dayton.")
    assert kin_of(*said, name="Ruth Adler", aliases=("Ruth",)) == ["Grandma"]
    assert facts_of(*said, name="Ruth Adler", aliases=("Ruth",)) == [
        "Ruth sewed all our Halloween costumes.", "Ruth was a nurse in Dayton."]
    # About Rose, "Grandma" is tied to Ruth: neither it nor bare "Grandma" is Rose.
    assert kin_of(*said) == []
    assert facts_of(*said) == []


def test_a_family_tied_to_another_name_does_not_compete():
    # "Grandma Ruth" and "Dad, Henry" are other people, so Mom is the only family left.
    said = ("Grandma Ruth sewed all our Halloween costumes.",
            "Mom married Dad, Henry Whitfield, in June 1955.",
            "Mom was a nurse in Dayton.")
    assert kin_of(*said) == ["Mom"]
    assert facts_of(*said) == ["Rose married Dad, Henry Whitfield, in June 1955.",
                               "Rose was a nurse in Dayton."]


def test_religious_titles_and_in_laws_are_not_relatives():
    said = ("Father Murphy baptized all of us.", "My mother-in-law was a nurse.",
            "Dad worked at the steel mill in Toledo.")
    assert kin_of(*said, name="Frank Moreno", aliases=("Frank",)) == ["Dad"]
    assert facts_of(*said, name="Frank Moreno", aliases=("Frank",)) == [
        "Frank worked at the steel mill in Toledo."]


# --- rule 2: which family is the legacy, per conversation -------------------------------------


@pytest.mark.parametrize("link", [
    "My mom, Rose, was born in 1931.",
    "Mom (Rose) was born in 1931.",
    "Rose was my mother.",
    "Rose, my mother, was born in 1931.",
    "My mother Rose was born in 1931.",
    "Mom's name was Rose.",
    "My late mom was Rose Whitfield.",
])
def test_a_link_makes_the_family_the_legacy_even_next_to_dad(link):
    said = (link, "Dad worked at the steel mill in Toledo.", "Mama grew peonies by the back door.")
    assert "Dad" not in kin_of(*said)
    assert {"Mama", "Mom", "Mother"} & set(kin_of(*said))
    assert "Rose grew peonies by the back door." in facts_of(*said)
    assert not any("steel mill" in fact for fact in facts_of(*said))


@pytest.mark.parametrize("dad", [
    "Dad fixed the dock every spring.",
    "At the lake Dad fixed the dock.",
    "My late father fixed the dock.",
    "we visited dad at the dock.",
])
def test_mom_and_dad_unlinked_are_nobody(dad):
    said = ("Mom was a nurse in Dayton.", dad, "Dad worked at the steel mill in Toledo.")
    assert kin_of(*said) == []
    assert facts_of(*said) == []


def test_words_that_only_look_like_kin_do_not_compete():
    said = ("Mom was a nurse in Dayton.", "Pop music was on the radio all day.",
            "Mother's Day was a big deal.", "Yes ma'am, that was us.")
    assert kin_of(*said) == ["Mom"]
    assert facts_of(*said) == ["Rose was a nurse in Dayton."]


def test_the_only_parent_family_unlinked_is_the_legacy_in_all_its_words():
    said = ("Mom was a nurse in Dayton.", "My mother grew peonies by the back door.",
            "My brother Tom fixed the dock every spring.", "My husband and I visited every week.")
    assert kin_of(*said) == ["Mom", "Mother"]
    assert facts_of(*said) == ["Rose was a nurse in Dayton.",
                               "Rose grew peonies by the back door."]


def test_siblings_spouses_and_aunts_are_the_legacy_only_when_linked():
    assert kin_of("My husband fixed the dock every spring.") == []
    assert kin_of("My husband, Sam, fixed the dock.", name="Samuel Ortiz",
                  aliases=("Samuel", "Sam")) == ["Husband"]
    assert facts_of("My aunt was a nurse in Dayton.") == []
    assert facts_of("My aunt Rose was a nurse in Dayton.") == ["Rose was a nurse in Dayton."]


def test_her_dad_is_the_legacys_father_and_does_not_compete():
    said = ("Mom was a nurse in Dayton.", "Her dad was a miner in Kentucky.",
            "His mother sewed quilts.", "Sam's father worked at the steel mill.")
    assert kin_of(*said) == ["Mom"]
    assert facts_of(*said) == ["Rose was a nurse in Dayton."]


# --- once the user calls the legacy by name, an unlinked family is someone else --------------


def test_a_fact_about_dad_is_not_filed_under_rose_when_the_user_calls_her_rose():
    said = ("Rose loved gardening.", "Dad worked at the steel mill for thirty years.")
    assert kin_of(*said) == []
    assert facts_of(*said) == ["Rose loved gardening."]


def test_an_unlinked_mum_alone_is_still_the_legacy():
    assert kin_of("Mum was a nurse.") == ["Mum"]
    assert facts_of("Mum was a nurse.") == ["Rose was a nurse."]


@pytest.mark.parametrize("said", [
    ("Rose grew peonies by the back door.", "Mom was a nurse."),
    ("Mom was a nurse.", "Rose grew peonies by the back door."),
    ("Mom was a nurse.", "Rose's father worked at the steel mill."),
])
def test_an_unlinked_mom_is_not_the_legacy_the_user_calls_rose(said):
    # Precision first: Mom may be Rose, but nothing the user said ties them.
    assert kin_of(*said) == []
    assert not [fact for fact in facts_of(*said) if "nurse" in fact]


def test_a_link_still_counts_when_the_user_also_says_the_name():
    said = ("Rose loved gardening.", "Dad worked at the steel mill.", "Rose was my mom.",
            "Mom was a nurse.")
    assert kin_of(*said) == ["Mom"]
    assert facts_of(*said) == ["Rose loved gardening.", "Rose was my mom.", "Rose was a nurse."]


def test_an_unlinked_family_of_the_other_gender_is_not_the_legacy_either():
    # The user calls her Rose, so the unlinked Dad is someone else.
    said = ("Rose kept a diary. She wrote in it every night.",
            "Dad bought her a red Chevy in 1958.")
    assert kin_of(*said) == []
    assert facts_of(*said) == ["Rose kept a diary.", "Rose wrote in the diary every night."]


# --- inside one batch ---------------------------------------------------------------------


def test_a_pronoun_after_another_person_follows_gender():
    # "Mom" was tied to Rose in an earlier batch; this one mentions Dad too.
    assert facts_of(
        "Mom was a nurse in Dayton.", "Dad fixed the dock every spring.", "He was very handy.",
        "She loved the lake in summer.",
        aliases=("Rose", "Mom"),
    ) == ["Rose was a nurse in Dayton.", "Rose loved the lake in summer."]


def test_the_extractor_guesses_no_family_on_its_own():
    # Only what it is given, plus links inside its own batch.
    batch = lines("Mom was a nurse in Dayton.")
    assert extract_facts(batch, ROSE, ("Rose",)) == []
    assert [f.content for f in extract_facts(batch, ROSE, ("Rose", "Mom"))] == [
        "Rose was a nurse in Dayton."]
    linked = lines("My mom, Rose, was a nurse in Dayton.", "Mama loved peonies by the door.")
    assert [f.content for f in extract_facts(linked, ROSE, ("Rose",))] == [
        "Rose was a nurse in Dayton.", "Rose loved peonies by the door."]


def test_a_given_family_is_dropped_when_the_batch_ties_it_to_someone_else():
    batch = lines("Grandma Ruth sewed all our Halloween costumes.", "Grandma was a nurse.")
    assert extract_facts(batch, ROSE, ("Rose", "Grandma")) == []


def test_questions_hedges_and_the_user_still_are_not_facts():
    assert facts_of(
        "My mom, Rose, was born in 1931.",
        "Was Mom a nurse?", "Maybe Mom liked jazz.", "I was born in 1960.",
        ("assistant", "Rose was a famous pianist."),
        "Actually, she was born in 1932.",
    ) == ["Rose was born in 1932."]


def categorised_facts_of(*pairs, aliases=("Rose",)):
    """Facts of one batch, with the kinship aliases the pipeline would pass for it."""
    lines = [TranscriptLine(sequence=i, role=role, content=text)
             for i, (role, text) in enumerate(pairs)]
    kin = kinship_aliases([text for role, text in pairs if role == "user"], "Rose Whitfield",
                          aliases)
    return [(f.category, f.content)
            for f in extract_facts(lines, "Rose Whitfield", [*aliases, *kin])]


def test_them_after_a_kind_is_the_kind_in_the_plural():
    assert categorised_facts_of(
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
    contents = [content for _, content in categorised_facts_of(*pairs)]
    assert not any(
        word in content.lower().split() for content in contents
        for word in ("them", "it", "that")
    )
    assert contents == (["Rose got up at five."] if "five" in pairs[0][1] else [])


def test_it_points_at_the_thing_in_the_previous_sentence_even_the_assistants():
    assert categorised_facts_of(
        ("assistant", "Did Rose keep a diary?"),
        ("user", "She kept it in a tin box under her bed."),
        ("user", "Dad bought her a red Chevy in 1958. She drove it to church every Sunday."),
    ) == [("other", "Rose kept the diary in a tin box under her bed."),
          ("habit", "Rose drove the red Chevy to church every Sunday.")]


def test_it_as_a_dummy_subject_and_that_as_a_conjunction_are_not_objects():
    assert categorised_facts_of(
        ("user", "Mom made sure it was spotless every Sunday."),
        ("user", "Mom knew that he would come back."),
    ) == [("habit", "Rose made sure it was spotless every Sunday."),
          ("other", "Rose knew that he would come back.")]


def test_a_fact_about_the_person_may_mention_the_user():
    # The seed's rule is "facts about the legacy person, not about the user themselves":
    # Rose teaching is about Rose; the user learning on their own is not.
    assert categorised_facts_of(
        ("user", "Mom taught me to play the piano when I was six."),
        ("user", "I played the piano at her funeral."),
    ) == [("relationship", "Rose taught me to play the piano when I was six.")]


# --- corrections (issue 10): the batch, and the user's known facts ----------------------------


def corrected(*said, known=(), name=ROSE, aliases=("Rose",)):
    """(content, supersedes) of one batch sent with the known facts f1, f2, …"""
    from memory_site.core.ai import KnownFact

    batch = lines(*said)
    kin = kin_of(*said, name=name, aliases=aliases)
    facts = extract_facts(batch, name, [*aliases, *kin],
                          [KnownFact(ref=f"f{i}", content=c) for i, c in enumerate(known, 1)])
    return [(f.content, f.supersedes) for f in facts]


def test_a_fragment_in_a_later_batch_corrects_the_closest_known_value():
    known = ("Rose was born in 1931.", "Rose married in 1961.")
    assert corrected("Sorry, it was 1962.", known=known) == [("Rose married in 1962.", "f2")]
    # The agent's question says which fact; "not 1931" too.
    assert corrected(("assistant", "When was Rose born?"), "Sorry, it was 1932.",
                     known=known) == [("Rose was born in 1932.", "f1")]
    assert corrected("No wait, 1930, not 1931.", known=known) == [
        ("Rose was born in 1930.", "f1")]


def test_a_fragment_whose_value_a_known_fact_states_already_corrects_nothing():
    """"Sorry, it was 1962" said again after the correction was made: nothing says which fact,
    and one states 1962 already. Before, the closest other year was corrected: the family's
    shared "married … in June 1955" became 1962 (found by a live check of the README)."""
    known = ("Rose married Harold in 1962 at St. Mary's.",
             "Rose married Henry Whitfield in June 1955 at the little church.")
    assert corrected("Sorry, I got that wrong: it was 1962.", known=known) == []
    # Which fact is said (the value taken back, or the agent's question): it is corrected.
    assert corrected("Sorry, it was 1962, not 1955.", known=known) == [
        ("Rose married Henry Whitfield in June 1962 at the little church.", "f2")]
    assert corrected(("assistant", "When did Rose marry Henry Whitfield?"),
                     "Sorry, it was 1962.", known=known) == [
        ("Rose married Henry Whitfield in June 1962 at the little church.", "f2")]


def test_a_restated_attribute_supersedes_without_a_marker_but_a_second_job_does_not():
    assert corrected("Rose married in 1962.", known=("Rose married in 1961.",)) == [
        ("Rose married in 1962.", "f1")]
    assert corrected("Rose was born in Limerick.", known=("Rose was born in Cork in 1931.",)) \
        == [("Rose was born in Limerick in 1931.", "f1")]
    # People change jobs: only a marked correction replaces one.
    assert corrected("Rose worked as a teacher.", known=("Rose worked as a nurse.",)) == [
        ("Rose worked as a teacher.", None)]
    assert corrected(("assistant", "Tell me about Rose."), "Actually she worked as a teacher.",
                     known=("Rose worked as a nurse.",)) == [("Rose worked as a teacher.", "f1")]


def test_marked_corrections_of_ordinals_and_said_before():
    assert corrected(("assistant", "Rose was the eldest?"),
                     "no wait, she was the second of five, not the eldest.",
                     known=("Rose was the eldest.",)) == [("Rose was the second of five.", "f1")]
    assert corrected("Frank drove a bus, I said a taxi before but that was his brother.",
                     known=("Frank drove a taxi for twenty years.",), name="Frank Moreno",
                     aliases=("Frank",)) == [("Frank drove a bus for twenty years.", "f1")]
    assert corrected("I said 1961 before, but it was 1962.", known=("Rose married in 1961.",)) \
        == [("Rose married in 1962.", "f1")]


def test_a_corrected_day_of_the_week_keeps_the_number_the_fact_said_it_in():
    """Found by a new-user walkthrough: "every Sunday" corrected by "it was Tuesdays, not
    Sundays" was filed as "every Tuesdays"."""
    assert facts_of("Rose sang in the church choir every Sunday.",
                    "Actually it was Tuesdays, not Sundays.") == [
        "Rose sang in the church choir every Tuesday."]
    assert facts_of("Rose played the piano every Sunday.", "No wait, it was Tuesdays.") == [
        "Rose played the piano every Tuesday."]
    assert corrected("Actually it was Tuesdays, not Sundays.",
                     known=("Rose sang in the church choir every Sunday.",)) == [
        ("Rose sang in the church choir every Tuesday.", "f1")]
    assert corrected("Actually it was Tuesday, not Sunday.",
                     known=("Rose sang in the church choir on Sundays.",)) == [
        ("Rose sang in the church choir on Tuesdays.", "f1")]
    # A whole statement that takes back the plural of the day the fact says (a walkthrough).
    assert corrected("Actually, she called Ruth on Saturdays, not Sundays.",
                     known=("Rose called her sister Ruth every Sunday at six.",)) == [
        ("Rose called her sister Ruth every Saturday at six.", "f1")]


def test_a_message_that_asks_not_to_be_kept_files_nothing():
    """Found by a walkthrough: "Please don't save anything about her illness" filed the
    illness the same message told."""
    assert facts_of("Rose had cancer for two years at the end. Please don't save anything "
                    "about her illness.", "Rose loved jazz.") == ["Rose loved jazz."]
    # Said of someone, it is a fact like any other.
    assert facts_of("Rose kept bees. She never wrote down her recipes.") == [
        "Rose kept bees.", "Rose never wrote down her recipes."]


def test_a_correction_that_matches_nothing_files_no_fragment_and_touches_no_fact():
    known = ("Rose loved dahlias.",)
    assert corrected("Actually it was 1985.", known=known) == []
    assert corrected("We visited Cork in the summer.", "Actually it was 1985.",
                     known=("Rose was born in 1931.",)) == []
    assert corrected("Rose sang alto.", known=known) == [("Rose sang alto.", None)]


def test_guesses_hedges_and_other_people_never_supersede():
    known = ("Rose was born in 1931.",)
    assert corrected(("assistant", "Rose was born in 1930, wasn't she?"), known=known) == []
    assert corrected("Rose was born in 1932, I think.", known=known) == []
    assert corrected("Her sister was born in 1932.", known=known) == []
    assert corrected("sorry, my uncle Karl was born in 1932, not 1931.", known=known) == []


def test_the_corrections_dev_set_files_nothing_it_must_not():
    from tests.support.extraction import quality_report

    report = quality_report("extractor_corrections_dev")
    assert report.wrongly_filed == [] and report.malformed == []
    assert report.precision >= 0.95, report.spurious
    assert report.recall >= 0.9, report.misses


# --- precision first: absolutes, counts, hedges, namesakes (corrections dev set 2) ----------


def test_a_never_contradicted_later_is_replaced_in_the_batch_and_across_batches():
    # In the batch: the absolute is not filed.
    assert facts_of("Rose never drove, she cycled everywhere.",
                    "Rose drove the red Fiesta into the ground.") == [
        "Rose drove the red Fiesta into the ground."]
    # In a later batch: it supersedes the known absolute, even opening with "she".
    known = ("Rose never left Boston her whole life.", "Rose made soda bread.")
    assert corrected("Rose went to Ireland in 1980 for her sister's wedding.", known=known) == [
        ("Rose went to Ireland in 1980 for her sister's wedding.", "f1")]
    assert corrected(("assistant", "Did she ever travel?"),
                     "She flew to Perth in 1985.",
                     known=("Rose never flew anywhere.",)) == [
        ("Rose flew to Perth in 1985.", "f1")]
    assert corrected("Rose moved to Florida in 1992.",
                     known=("Rose always lived in the same house on Elm Street.",)) == [
        ("Rose moved to Florida in 1992.", "f1")]
    # Another verb, or "never" said again, replaces nothing; nor does "she" without an absolute.
    assert corrected("Rose sang in the choir.", known=("Rose never missed a Sunday.",)) == [
        ("Rose sang in the choir.", None)]
    assert corrected("Rose never went to church.", known=known) == [
        ("Rose never went to church.", None)]
    assert corrected("She went to Mass every day.", known=("Rose never went to church.",)) == []


def test_a_count_restated_as_kids_or_in_a_fragment_supersedes():
    assert corrected("Rose had 12 kids.", known=("Rose had 11 children.",)) == [
        ("Rose had 12 kids.", "f1")]
    assert corrected("yes. 12 kids, I always forget poor Kevin.",
                     known=("Rose was born in 1931.", "Rose had 11 children.")) == [
        ("Rose had 12 children.", "f2")]


def test_hedged_values_are_not_filed():
    assert facts_of("Rose was 81 or 82, can't remember exactly.") == []
    assert facts_of("I'm pretty sure Rose retired in 1990.") == []
    assert facts_of("Rose was born in 1931 or so.") == []


def test_namesakes_and_other_peoples_possessives_are_not_the_person():
    # A year far from the one said before, without a marker: neither a correction nor a fact.
    assert facts_of("Rose was born in Sligo in 1934.",
                    "Rose, my sister, was born in 1962.") == ["Rose was born in Sligo in 1934."]
    assert corrected("Rose was born in 1962.", known=("Rose was born in 1934.",)) == []
    # With a marker it is a correction.
    assert corrected("Actually, Rose was born in 1962.", known=("Rose was born in 1934.",)) == [
        ("Rose was born in 1962.", "f1")]
    # "Rose's mama" is her mother.
    assert facts_of("Rose's mama was a midwife.", "Rose's garden was full of roses.") == [
        "Rose's garden was full of roses."]
