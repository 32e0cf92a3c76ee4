"""The legacy's other first names: the short forms a family uses ("Gene" for Eugene, "Peggy"
for Margaret), from the hand-curated table of the `nicknames` package (offline: the table ships
inside the package)."""

import re
from collections.abc import Sequence
from functools import lru_cache

from nicknames import NickNamer

from memory_site.core.language.words import FAMILY_OF, NOT_NAMES

# Short forms in the table that are also common English words, which open a sentence as
# often as a name does ("Will you…", "Art was her life", "Rich people…"): never an alias.
_WORDS = frozenset([
    "will", "wil", "bell", "art", "pate", "rich", "ant", "hob", "dob", "lib", "hap", "haps",
    "kit", "jos", "may", "hope", "joy", "dawn", "grace", "faith", "rusty", "buck", "chuck",
    "mark", "bud", "win", "dob", "nat",
])


@lru_cache(maxsize=1)
def _table() -> NickNamer:
    return NickNamer()


def _usable(name: str) -> bool:
    return (
        len(name) > 1 and name.isalpha()
        and name not in _WORDS
        and name not in FAMILY_OF
        and name.capitalize() not in NOT_NAMES
    )


@lru_cache(maxsize=1024)
def _variants(first_name: str) -> tuple[str, ...]:
    table = _table()
    name = first_name.lower()
    shorts = table.nicknames_of(name)
    # A short form given as the name ("Gene Farrell"): its full name, only when the table
    # gives one ("Hal" is Harold, Henry or Howard: none of them). Spellings of one name count
    # once ("Dot": Dorothy, Dotty, itself a short form of Dorothy).
    full = [f for f in table.canonicals_of(name) if len(f) > len(name)]
    if full:
        # The table's rows go both ways, so a short form's own "nicknames" are other names
        # ("Bill": Fred, Robert): a short form only gains its full name.
        full = [f for f in full if not any(f in table.nicknames_of(g) for g in full if g != f)]
        found = full if len(full) == 1 else []
    else:
        # Short forms: shorter than the name ("Sandra" lists "Cassandra"), and not a name
        # with short forms of its own that this one lacks ("Patrick" lists "Peter", whose
        # short form is "Pete": Peter is a name of its own; "Billy" lists "William" back, so
        # its list says who it stands for).
        found = [short for short in shorts if len(short) < len(name)
                 and (name in table.nicknames_of(short)
                      or not any(len(s) < len(short) and s not in shorts
                                 for s in table.nicknames_of(short)))]
    return tuple(sorted(variant.capitalize() for variant in set(found) if _usable(variant)))


def short_forms(first_names: Sequence[str]) -> list[str]:
    """The other first names of the person whose own first names (and nicknames) are
    `first_names`: each one's short forms in the table ("Eugene" → "Gene", "Margaret" →
    "Peggy", "Maggie", "Meg", …) and, for a short form with a single full name, that name
    ("Gene" → "Eugene"). Only one-word names are looked up; none of `first_names` is
    returned, nor a kinship word or a short form that is also a common word ("Will", "Art").
    Deterministic: the order of `first_names`, then alphabetical."""
    given = {n.strip().lower() for n in first_names}
    out: dict[str, None] = {}
    for first_name in first_names:
        word = first_name.strip()
        if not re.fullmatch(r"[A-Za-z]+", word) or word.lower() in FAMILY_OF:
            continue
        for variant in _variants(word):
            if variant.lower() not in given:
                out.setdefault(variant)
    return list(out)
