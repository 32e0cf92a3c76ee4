"""Near duplicates must state the same numbers, years and months: a corrected fact is a new fact."""

import pytest
from django.core.exceptions import ValidationError

from facts import services
from facts.models import LegacyFact

pytestmark = pytest.mark.django_db

MARRIED = "Rose married Henry Whitfield in June 1962 at the little church on Main Street."
WEDDING = (
    "Rose married Henry Whitfield in June 1962 at the little church on Main Street in Dayton, "
    "with her three sisters and both her parents there."
)
PIANO = "Rose taught piano to the children on Elm Street for thirty years, every weekday."
FARM = "Rose was the first of six children born on the farm outside Dayton, Ohio."


def _create(family, content):
    return services.fact_create(
        legacy=family.legacy, user=family.owner, category="relationship", content=content
    )


def test_a_corrected_year_is_saved_as_a_new_fact(family):
    first, _ = _create(family, MARRIED)
    corrected, created = _create(family, MARRIED.replace("1962", "1961"))
    assert created is True and corrected.pk != first.pk
    assert sorted(LegacyFact.objects.values_list("content", flat=True)) == sorted(
        [MARRIED, MARRIED.replace("1962", "1961")]
    )


@pytest.mark.parametrize(
    ("original", "changed"),
    [
        (MARRIED, MARRIED.replace("June", "July")),
        (WEDDING, WEDDING.replace("1962", "nineteen sixty-one")),
        (PIANO, PIANO.replace("thirty", "forty")),
        (FARM, FARM.replace("first", "second")),
    ],
    ids=["month", "written-out-year", "written-out-number", "ordinal"],
)
def test_facts_that_state_other_values_are_never_near_duplicates(family, original, changed):
    _create(family, original)
    _, created = _create(family, changed)
    assert created is True
    assert LegacyFact.objects.count() == 2


@pytest.mark.parametrize(
    ("original", "same"),
    [
        (WEDDING, WEDDING.replace("1962", "nineteen sixty-two")),
        (MARRIED, MARRIED.replace("little", "small")),
        (MARRIED, MARRIED.lower().rstrip(".")),
    ],
    ids=["year-written-out", "one-word-changed", "case-and-punctuation"],
)
def test_the_same_values_in_a_near_identical_text_are_still_a_duplicate(family, original, same):
    first, _ = _create(family, original)
    existing, created = _create(family, same)
    assert (existing.pk, created) == (first.pk, False)
    assert LegacyFact.objects.count() == 1


def test_editing_a_fact_to_correct_its_year_is_allowed(family):
    _create(family, MARRIED)
    other, _ = _create(family, "Rose married Henry Whitfield in June 1961 at the church.")
    updated = services.fact_update(
        fact=other, user=family.owner, content=MARRIED.replace("1962", "1961")
    )
    assert updated.content == MARRIED.replace("1962", "1961")
    with pytest.raises(ValidationError):
        services.fact_update(fact=other, user=family.owner, content=MARRIED)


@pytest.mark.parametrize(
    ("content", "values"),
    [
        ("Born in nineteen fifty-five, married in 1,000 days", {"1955", "1000"}),
        ("Nineteen oh five, or two thousand and five", {"1905", "2005"}),
        ("Her first job began on the 3rd of May", {"1", "3", "may"}),
        ("Oh, she was thirty-one in the 1950s", {"31", "1950"}),
        ("She may have loved it", set()),
    ],
)
def test_fact_values(content, values):
    assert services.fact_values(content) == values


@pytest.mark.parametrize(("first", "again", "duplicate"), [
    # The person named otherwise: the name the family calls them by, learnt later (found by a
    # live check: "Freda loved brass band music." was stored beside "Winifred loved …"). The
    # legacy is Rose Whitfield; the pipeline passes what the conversation calls her (Freda).
    ("Rose loved brass band music.", "Freda loved brass band music.", True),
    ("Rose was born in Blackburn in 1933.", "Freda was born in Blackburn in 1934.", False),
    ("Rose sang.", "Freda sang.", False),  # too little after the name to tell
    # Not the person's name: someone else (found by a hostile relative).
    ("Rose worked at the wool mill.", "Harold worked at the wool mill.", False),
    ("Rose loved brass band music.", "Nobody loved brass band music.", False),
    ("She is buried at St Mary's churchyard.", "Harold is buried at St Mary's churchyard.",
     False),
])
def test_a_fact_said_again_under_another_name(family, first, again, duplicate):
    kept = _create(family, first)[0]
    fact, created = services.fact_create(
        legacy=family.legacy, user=family.owner, category="relationship", content=again,
        person_names=["Freda"])
    assert (fact == kept and not created) == duplicate
