"""Racing writers of one author's facts about a legacy leave no duplicates behind.

The duplicate check is slowed down so that, without a lock, every writer finishes its check
before any of them inserts: the race is certain, not left to the scheduler.
"""

import threading
import time
from collections.abc import Callable

import pytest
from django.core.exceptions import ValidationError
from django.db import connections

from facts import services
from facts.models import LegacyFact, LegacyMembership
from tests.factories import LegacyFactFactory

pytestmark = pytest.mark.django_db(transaction=True)

WRITERS = 6
CHECK_SECONDS = 0.25


@pytest.fixture
def slow_duplicate_check(monkeypatch):
    check = services.fact_find_duplicate

    def slow(**kwargs):
        found = check(**kwargs)
        time.sleep(CHECK_SECONDS)
        return found

    monkeypatch.setattr(services, "fact_find_duplicate", slow)


def _race(work: Callable[[int], object], writers: int = WRITERS) -> tuple[list, list]:
    barrier = threading.Barrier(writers)
    results: list[object] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run(n: int) -> None:
        try:
            barrier.wait(timeout=10)
            result = work(n)
            with lock:
                results.append(result)
        except BaseException as exc:  # collected and checked in the main thread
            with lock:
                errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return results, errors


def test_concurrent_creates_of_the_same_fact_save_it_once(family, slow_duplicate_check):
    results, errors = _race(
        lambda n: services.fact_create(
            legacy=family.legacy, user=family.member, category="hobby",
            content="She grew prize-winning dahlias." if n % 2 else "she grew prize winning DAHLIAS",
        )
    )
    assert errors == []
    facts = list(LegacyFact.objects.filter(legacy=family.legacy, user=family.member))
    assert len(facts) == 1
    assert sorted(created for _, created in results) == [False] * (WRITERS - 1) + [True]
    assert {fact.pk for fact, _ in results} == {facts[0].pk}


def test_concurrent_creates_for_an_author_without_a_membership_save_it_once(
    family, slow_duplicate_check
):
    # The archive job of a conversation can still run after its user has left the legacy.
    LegacyMembership.objects.filter(legacy=family.legacy, user=family.member).delete()
    results, errors = _race(
        lambda n: services.fact_create(
            legacy=family.legacy, user=family.member, category="habit",
            content="She did the crossword in ink.",
        )
    )
    assert errors == []
    assert LegacyFact.objects.filter(legacy=family.legacy, user=family.member).count() == 1
    assert sorted(created for _, created in results) == [False] * (WRITERS - 1) + [True]


def test_a_hand_added_fact_racing_extraction_is_saved_once(family, slow_duplicate_check):
    """Different writers (the archive job, a person) of the same author serialise too."""
    sources = [None, (0, 20)]
    results, errors = _race(
        lambda n: services.fact_create(
            legacy=family.legacy, user=family.owner, category="occupation",
            content="Rose taught piano on Elm Street.", source_range=sources[n],
        ),
        writers=2,
    )
    assert errors == []
    assert LegacyFact.objects.filter(legacy=family.legacy, user=family.owner).count() == 1


def test_concurrent_edits_cannot_make_two_facts_duplicates(family, slow_duplicate_check):
    facts = [
        LegacyFactFactory(legacy=family.legacy, user=family.owner, content=f"Fact number {n}.")
        for n in range(2)
    ]
    results, errors = _race(
        lambda n: services.fact_update(
            fact=facts[n], user=family.owner, content="She loved the sea."
        ),
        writers=2,
    )
    assert len(results) == 1
    assert len(errors) == 1 and isinstance(errors[0], ValidationError)
    assert errors[0].message_dict == {
        "content": ["That duplicates another of your facts about this legacy."]
    }
    contents = sorted(
        LegacyFact.objects.filter(legacy=family.legacy, user=family.owner)
        .values_list("content", flat=True)
    )
    assert contents in (
        ["Fact number 0.", "She loved the sea."], ["Fact number 1.", "She loved the sea."]
    )


@pytest.mark.parametrize("write", ["edit", "visibility"])
def test_an_edit_of_a_fact_deleted_meanwhile_is_not_found(family, write):
    """The view read the fact, then a DELETE of it committed: the edit finds it gone (a 404),
    where it raised DoesNotExist (a 500)."""
    from memory_site.core.errors import NotFound

    fact = LegacyFactFactory(legacy=family.legacy, user=family.owner, content="Rose kept bees.")
    LegacyFact.objects.filter(pk=fact.pk).delete()
    with pytest.raises(NotFound):
        if write == "edit":
            services.fact_update(fact=fact, user=family.owner, content="Rose kept hens.")
        else:
            services.fact_set_visibility(fact=fact, user=family.owner, visibility="shared")
    assert not LegacyFact.objects.exists()
