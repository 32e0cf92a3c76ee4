"""Attributes a fact states about its subject, and their values: "Rose was born in Cork in 1931"
states born_place = cork and born_year = 1931. Two facts that state the same attribute with
different values contradict each other: from the same user, the later corrects the earlier
(the offline extractor); from two members, they are a conflict (facts.services).

Only what a person has once in a life is an attribute compared without a correction marker
(`SINGLE_VALUED`): when and where they were born, married or died, where they came from, their
place among their siblings, how many children they had. An occupation is an attribute too, but
people change jobs: two occupations contradict each other only when the user says one corrects
the other ("he drove a bus, I said a taxi before").
"""

import re
from dataclasses import dataclass
from functools import lru_cache

from memory_site.core.language.words import NOT_NAMES

_YEAR = r"(?:1[6-9]\d\d|20\d\d)"
_MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)
_NAME_WORD = r"[A-Z][a-z]+\.?(?:['’][A-Za-z]+)?"
_PLACE = rf"{_NAME_WORD}(?:[ -](?:{_NAME_WORD}|upon|on|de|del|la))*"
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15,
}
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12,
    "eldest": 1, "oldest": 1,
}
_ORDINAL_WORD = (
    r"(?:eldest|oldest|youngest|middle|first|second|third|fourth|fifth|sixth|seventh|eighth|"
    r"ninth|tenth|eleventh|twelfth|\d{1,2}(?:st|nd|rd|th))"
)
_COUNT_WORD = rf"(?:\d{{1,2}}|{'|'.join(_NUMBER_WORDS)})"

# The subject the statement is about, at its start: a name of up to four words or a pronoun,
# never a possessive ("Rose's mother was born…" is about her mother).
_SUBJECT = re.compile(
    r"^(?:(?:[A-Z][\w.-]*)(?:\s+[A-Z][\w.-]*){0,3}|[Ss]he|[Hh]e)(?!['’]s\b)"
    # "Rose, my mom, was born…": the apposition is part of the subject.
    r"(?:,\s*(?:[Mm]y|[Oo]ur|[Hh]er|[Hh]is|[Tt]heir)\s+[a-z]+(?:\s+[a-z]+)?,)?\s+"
    r"(?:(?:actually|really|also|later|finally|then|only)\s+)*"
)
# The events a life has once (or, for "married", once per marriage: see _same_marriage).
_EVENT = re.compile(
    r"\b(?P<event>born|married|(?:got|was)\s+married|wed|died|passed away|passed on|passed|"
    r"retired|emigrated|graduated)\b",
    re.IGNORECASE,
)
_EVENT_NAMES = {
    "born": "born", "married": "married", "wed": "married", "died": "died",
    "passed away": "died", "passed on": "died", "passed": "died", "retired": "retired",
    "emigrated": "emigrated", "graduated": "graduated",
}
_IN_YEAR = re.compile(rf"\b(?:in|of)\s+(?:(?:{'|'.join(_MONTH_NAMES)})\s+(?:\d{{1,2}}\s*,?\s+)?)?"
                      rf"(?P<year>{_YEAR})\b|\b(?P<bare>{_YEAR})\b")
_IN_PLACE = re.compile(rf"\b(?:in|at)\s+(?:the\s+)?(?P<place>{_PLACE})")
_AT_AGE = re.compile(r"\bat\s+(?:the\s+age\s+of\s+)?(?:age\s+)?(?P<age>\d{1,3})\b")
_SPOUSE = re.compile(rf"\bmarried\s+(?P<spouse>{_NAME_WORD})")
_FROM = re.compile(rf"^(?:was|came)\s+(?:originally\s+)?from\s+(?:the\s+)?(?P<place>{_PLACE})")
_ORDER = re.compile(
    rf"^was\s+(?:the\s+)?(?P<order>{_ORDINAL_WORD})(?:\s+(?:child|children|daughter|son|girl|"
    rf"boy|kid|sibling))?(?:\s+(?:of|in\s+a\s+family\s+of)\s+(?P<of>{_COUNT_WORD}))?\b",
    re.IGNORECASE,
)
# "had 11 children", "had three brothers and two sisters", "had 9 grandchildren".
_COUNTS = re.compile(
    rf"\b(?:(?:had|raised)\s+|and\s+)(?P<count>{_COUNT_WORD})\s+(?P<kind>children|kids|sons|"
    rf"daughters|grandchildren|grandkids|grandsons|granddaughters|brothers|sisters|siblings)\b",
    re.IGNORECASE,
)
# "kids" and "children" (and "grandkids", "grandchildren") state one number.
_COUNT_NAMES = {"kids": "children", "grandkids": "grandchildren"}
_WORKED_AS = re.compile(
    r"\b(?:worked|served)\s+as\s+(?:an?\s+|the\s+)?(?P<job>[a-z][a-z-]+(?:\s+[a-z][a-z-]+)?)",
)
_DROVE = re.compile(r"^drove\s+(?:an?\s+|the\s+)?(?P<job>[a-z][a-z-]+)\b")
_JOB_END = re.compile(r"\s+(?:for|in|at|on|with|from|until|till|during|and|after|before)$")

SINGLE_VALUED = frozenset([
    "born_year", "born_place", "died_year", "died_place", "died_age", "married_year",
    "married_place", "retired_year", "emigrated_year", "graduated_year", "from_place",
    "birth_order", "children_count", "sons_count", "daughters_count", "grandchildren_count",
    "grandsons_count", "granddaughters_count", "brothers_count", "sisters_count",
    "siblings_count",
])


@dataclass(frozen=True)
class Attribute:
    name: str  # "born_year", "birth_order", "occupation", ...
    value: str  # normalised for comparison: "1931", "cork", "2/5"
    text: str  # the value as the fact writes it: "1931", "Cork", "second of five"


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word.lower()]


def _place(text: str) -> str | None:
    words = text.split()
    # "in June 1931", "in Her garden": not a place.
    while words and (words[-1] in NOT_NAMES or words[-1] in _MONTH_NAMES):
        words.pop()
    if not words or words[0] in NOT_NAMES or words[0] in _MONTH_NAMES:
        return None
    place = " ".join(words)
    # "St." is part of a name; a full stop after the last word ends the sentence.
    return place if re.search(r"\b(?:St|Mt|Ft)\.$", place) else place.rstrip(".")


def _order(order: str, of: str | None) -> str:
    word = order.lower()
    total = _count(of) if of else None
    if word == "youngest":
        place = str(total) if total else "last"
    elif word == "middle":
        place = "middle"
    else:
        place = str(_ORDINALS[word] if word in _ORDINALS else int(re.sub(r"\D", "", word)))
    return f"{place}/{total}" if total else place


def _event_attributes(body: str) -> list[Attribute]:
    """born/married/died/... with the year, place or age said in the same clause."""
    found: list[Attribute] = []
    events = list(_EVENT.finditer(body))
    for index, match in enumerate(events):
        event = _EVENT_NAMES[re.sub(r"^(?:got|was)\s+", "", match.group("event").lower())]
        end = events[index + 1].start() if index + 1 < len(events) else len(body)
        clause = body[match.end():end]
        # "…, and her sister was born in 1935": another subject takes over.
        clause = re.split(r"\b(?:and|but|while|when|where|after|before)\s+(?:her|his|my|their|"
                          r"our)\b|;", clause)[0]
        year = _IN_YEAR.search(clause)
        if year:
            value = year.group("year") or year.group("bare")
            found.append(Attribute(f"{event}_year", value, value))
        for place_match in _IN_PLACE.finditer(clause):
            place = _place(place_match.group("place"))
            if place and event in ("born", "died", "married"):
                found.append(Attribute(f"{event}_place", place.lower(), place))
                break
        if event == "died":
            age = _AT_AGE.search(clause)
            if age:
                found.append(Attribute("died_age", age.group("age"), age.group("age")))
    return found


def fact_attributes(content: str) -> dict[str, Attribute]:
    """The attributes `content` states about the subject it starts with; {} when it states none
    or is about someone else ("Rose's mother was born in Cork")."""
    return dict(_attributes(content))


# A batch compares each of its facts with every known fact: each text is read once. As many
# texts as facts.services.FACT_TEXT_CACHE_SIZE (an LRU smaller than a family's facts, read in
# the same order every time, never hits).
@lru_cache(maxsize=16384)
def _attributes(content: str) -> tuple[tuple[str, Attribute], ...]:
    return tuple(_read_attributes(content).items())


def _read_attributes(content: str) -> dict[str, Attribute]:
    subject = _SUBJECT.match(content.strip())
    if subject is None:
        return {}
    body = content.strip()[subject.end():]
    found: dict[str, Attribute] = {}
    for attribute in _event_attributes(body):
        found.setdefault(attribute.name, attribute)
    origin = _FROM.match(body)
    if origin:
        place = _place(origin.group("place"))
        if place:
            found["from_place"] = Attribute("from_place", place.lower(), place)
    order = _ORDER.match(body)
    if order:
        text_value = order.group(0).split(None, 1)[1]
        found["birth_order"] = Attribute(
            "birth_order", _order(order.group("order"), order.group("of")),
            re.sub(r"^the\s+", "", text_value, flags=re.IGNORECASE),
        )
    counting = False
    for count in _COUNTS.finditer(body):
        # "…and two sisters" counts only after "had three brothers" (not "…and two dogs").
        if not (counting or count.group(0).lower().startswith(("had", "raised"))):
            continue
        counting = True
        kind = count.group("kind").lower()
        name = f"{_COUNT_NAMES.get(kind, kind)}_count"
        found.setdefault(name, Attribute(name, str(_count(count.group("count"))),
                                         count.group("count")))
    job = _WORKED_AS.search(body) or _DROVE.match(body)
    if job:
        words = _JOB_END.sub("", job.group("job"))
        words = re.split(r"\s+(?:for|in|at|on|with|from|until|and)\b", words)[0]
        found["occupation"] = Attribute("occupation", words.lower(), words)
    return found


def _same_value(a: Attribute, b: Attribute) -> bool:
    if a.value == b.value:
        return True
    if a.name.endswith("_place") or a.name == "from_place":
        # "Cork" and "County Cork", "Dayton" and "Dayton Ohio": one place, said more or less
        # fully.
        words_a, words_b = set(a.value.split()), set(b.value.split())
        return words_a <= words_b or words_b <= words_a
    if a.name == "birth_order":
        # "the second" and "the second of five" agree; "the youngest" agrees with "fifth of five".
        place_a, _, of_a = a.value.partition("/")
        place_b, _, of_b = b.value.partition("/")
        if of_a and of_b and of_a != of_b:
            return False
        return place_a == place_b or "last" in (place_a, place_b) and bool(of_a or of_b) and (
            (place_a == "last" and place_b == (of_a or of_b))
            or (place_b == "last" and place_a == (of_a or of_b))
        )
    return False


def _same_marriage(a: str, b: str) -> bool:
    """Two facts about marrying are about one marriage unless they name different spouses."""
    spouse_a, spouse_b = _SPOUSE.search(a), _SPOUSE.search(b)
    return not (spouse_a and spouse_b and spouse_a.group("spouse") != spouse_b.group("spouse"))


def contradiction(new: str, old: str, *, marked: bool = False) -> tuple[Attribute, Attribute] | None:
    """The attribute `new` and `old` state with different values, as (new's, old's), or None.
    Without `marked` (a correction marker in what the user said) only SINGLE_VALUED
    attributes count; a fact that agrees on one attribute and differs on another still
    contradicts ("born in Cork in 1931" / "born in Cork in 1932")."""
    new_attributes, old_attributes = fact_attributes(new), fact_attributes(old)
    for name, attribute in new_attributes.items():
        other = old_attributes.get(name)
        if other is None or _same_value(attribute, other):
            continue
        if name not in SINGLE_VALUED and not marked:
            continue
        if name.startswith("married_") and not _same_marriage(new, old):
            continue
        return attribute, other
    return None


# A year restated without a correction marker this far from the one said before is more
# likely another person's or another event ("Kathleen, my sister, was born in 1962" after
# "Kay was born in 1934") than a correction: 1961 is corrected to 1962, not to 1990.
FAR_YEARS = 10


def implausible_correction(new: str, old: str) -> bool:
    """Whether `new` restates a year of `old`'s (born, married, died, …) more than FAR_YEARS
    away, which without a marker is not taken as a correction: precision first, neither
    replaces the other and the new statement is not filed."""
    found = contradiction(new, old)
    if found is None or not found[0].name.endswith("_year"):
        return False
    return abs(int(found[0].value) - int(found[1].value)) > FAR_YEARS
    return None


# --- "never" and "always" said about the person, and later contradicted -------------------
# "She never left Boston" … "She went to Ireland in 1980": the absolute was a manner of
# speaking, and the later, concrete statement replaces it (precision first: the absolute is
# the statement that is wrong).
_ABSOLUTE = re.compile(
    r"\b(?P<word>never|always)\s+(?:once\s+|ever\s+|really\s+|even\s+)?"
    r"(?:(?:learned|learnt|got|used|bothered|wanted|managed)\s+to\s+)?(?P<verb>[a-z']+)"
    r"(?P<rest>[^,.;!?]*)",
    re.IGNORECASE,
)
_NEGATED = re.compile(r"\b(?:never|not|no longer|no|nor)\b|n't\b", re.IGNORECASE)
# Verbs too general to tell what an absolute is about ("never was one for church").
_GENERAL_VERBS = frozenset(["was", "were", "is", "be", "been", "had", "has", "have", "did",
                            "does", "do", "said", "says", "say", "got", "get", "gets", "went",
                            "go", "goes", "came", "come", "made", "make", "let", "a", "the",
                            "in", "on", "at", "there", "one", "so", "too", "very", "quite"])
_IRREGULAR = {
    "drove": "drive", "driven": "drive", "flew": "fly", "flown": "fly", "flies": "fly",
    "flying": "fly", "left": "leave", "rode": "ride", "ridden": "ride", "swam": "swim",
    "swum": "swim", "sang": "sing", "sung": "sing", "drank": "drink", "drunk": "drink",
    "ate": "eat", "eaten": "eat", "spoke": "speak", "spoken": "speak", "wore": "wear",
    "worn": "wear", "took": "take", "taken": "take", "wrote": "write", "written": "write",
    "smoked": "smoke", "bought": "buy", "sold": "sell", "taught": "teach", "caught": "catch",
    "lost": "lose", "missed": "miss", "won": "win", "threw": "throw", "knew": "know",
}
_TRAVEL = ("leave", "travel", "travelled", "traveled", "fly", "move", "moved", "emigrate",
           "emigrated", "sail", "sailed")
_FAR = re.compile(r"\b(?:anywhere|abroad|overseas|outside|away|further|farther|out\s+of)\b",
                  re.IGNORECASE)
# "went to Ireland", "flew to Perth", "moved to Florida", "visited Rome", "emigrated to Canada".
_TRAVELLED = re.compile(
    rf"\b(?:went|flew|travell?ed|moved|sailed|emigrated|took\s+a\s+trip|came\s+over)\s+"
    rf"(?:(?:over|out|back|down|up|away)\s+)?(?:to|for)\s+(?:the\s+)?{_PLACE}|\bvisited\s+{_PLACE}|"
    rf"\bmoved\s+(?:away|abroad|out)\b"
)
# "always lived in the same house", "always stayed in Dayton": a residence that never changed.
_RESIDENCE_VERBS = frozenset(["lived", "stayed", "live", "stay"])


_BACK = re.compile(r"^\s*(?:back|home)\b", re.IGNORECASE)
_RETURNED = re.compile(r"\b(?:went|came|got|flew|go|going|gone|been)\s+back\b|\breturned\b|"
                       r"\bvisited\b", re.IGNORECASE)
# "lived in Lisbon for two years" after "never left Fall River".
_LIVED_IN = re.compile(rf"\b(?:lived|stayed|worked)\s+(?:in|at)\s+(?P<place>{_PLACE})")


def _first_clause(text: str) -> str:
    return re.split(r"[,;.!?]", text, maxsplit=1)[0]


def _lived_elsewhere(old_rest: str, new_body: str) -> bool:
    """Whether `new_body` says the person lived somewhere that "never left <place>" (the
    absolute's `old_rest`) does not name."""
    lived = _LIVED_IN.search(_first_clause(new_body))
    if lived is None:
        return False
    place = _place(lived.group("place"))
    if place is None:
        return False
    old_places = set(re.findall(r"[A-Z][a-z]+", old_rest))
    return bool(old_places) and not set(place.split()) & old_places


def _stem(word: str) -> str:
    word = word.lower().strip("'")
    word = _IRREGULAR.get(word, word)
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word.rstrip("e")


_TRAVEL_STEMS = frozenset(_stem(verb) for verb in _TRAVEL)


# "never set foot on a plane", "never got on a plane", "never been abroad": journeys too.
_NEVER_FLEW = re.compile(
    r"^\s*(?:foot\s+on|on|in)\s+(?:a|an)\s+(?:aero|air)?planes?\b", re.IGNORECASE)
_NEVER_FLEW_VERBS = frozenset(["set", "got", "been", "gone", "stepped"])
# What an absolute's object is not: determiners, pronouns, numbers and empty words ("never
# missed a single one", "never cooked a thing in her life").
_OBJECT_FILLER = frozenset([
    "a", "an", "the", "one", "single", "of", "in", "at", "on", "to", "for", "her", "his",
    "their", "its", "my", "our", "your", "whole", "all", "those", "that", "this", "these",
    "once", "ever", "again", "life", "thing", "things", "anything", "something", "lot", "bit",
    "much", "any", "us", "me", "them", "him", "it", "she", "he", "out", "up", "down", "there",
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "few", "several",
    "many", "some", "so", "too", "very", "really", "with", "from", "by", "and", "or", "but",
    "then", "when", "because", "about", "off", "over", "back",
])
# A time as the object ("never missed a day", "never missed a Sunday"): what was never missed
# is a turn, and a later "missed months of work" says otherwise; "missed the bus" does not.
_TIME_UNITS = frozenset([
    "day", "days", "week", "weeks", "month", "months", "year", "years", "shift", "shifts",
    "night", "nights", "morning", "mornings", "hour", "hours", "minute", "minutes", "weekend",
    "weekends", "sunday", "sundays", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "saturdays",
])
# "drove us all mad", "drove him round the bend": not driving.
_IDIOM = re.compile(
    r"\b(?:mad|crazy|nuts|insane|bananas|bonkers|batty|spare|wild|up\s+the\s+wall|"
    r"round\s+the\s+bend|around\s+the\s+bend|to\s+distraction|to\s+drink)\b",
    re.IGNORECASE)


def _object_words(text: str) -> list[str]:
    """The words of a verb's object and what follows it in the clause, without fillers."""
    return [w for w in re.findall(r"[a-z']+", text.lower())
            if w not in _OBJECT_FILLER and not w.isdigit()]


def _same_object(old_rest: str, new_rest: str) -> bool:
    """Whether a statement's verb phrase (`new_rest`, after the verb) is about what a "never"
    said was never done (`old_rest`): "never drank tea" is not contradicted by "drank coffee",
    nor "never missed a Browns game" by "missed my wedding". An absolute without an object
    ("never drove", "never learned to drive") is contradicted by the verb alone, but not by
    an idiom ("drove us all mad")."""
    if _IDIOM.search(new_rest):
        return False
    old_words = _object_words(old_rest)
    if not old_words:
        return True
    new_words = _object_words(new_rest)
    if old_words[0] in _TIME_UNITS:
        return bool(new_words) and new_words[0] in _TIME_UNITS
    return bool({w[:5] for w in old_words} & {w[:5] for w in new_words})


def absolute_contradicted(new: str, old: str) -> bool:
    """Whether `new`, an affirmative statement about the person, contradicts a "never" or
    "always" that `old` says of them: the same verb said without "never" ("never drove" /
    "drove the Fiesta into the ground"), or a journey or a move after "never left", "never
    flew", "never travelled" or "always lived in …" ("never left Boston" / "went to Ireland in
    1980")."""
    lowered = old.lower()
    if "never" not in lowered and "always" not in lowered:
        return False
    old_subject, new_subject = _SUBJECT.match(old.strip()), _SUBJECT.match(new.strip())
    if old_subject is None or new_subject is None:
        return False
    new_body = new.strip()[new_subject.end():]
    # "drove that old wagon everywhere, … it was Pop who never had a licence": a negation in
    # a later clause says nothing of the first.
    if _NEGATED.search(_first_clause(new_body)):
        return False
    for absolute in _ABSOLUTE.finditer(old.strip()[old_subject.end():]):
        verb = absolute.group("verb").lower()
        if absolute.group("word").lower() == "always":
            if verb in _RESIDENCE_VERBS and _TRAVELLED.search(new_body):
                return True
            continue
        # "never went anywhere / abroad / outside the county", not "never went to church";
        # "never set foot on a plane", "never been on a plane" as "never flew".
        rest = absolute.group("rest")
        travel = _stem(verb) in _TRAVEL_STEMS or (
            verb in ("went", "been", "gone") and _FAR.search(rest) is not None) or (
            verb in _NEVER_FLEW_VERBS and _NEVER_FLEW.match(rest) is not None)
        if travel and _TRAVELLED.search(new_body):
            return True
        if travel and _lived_elsewhere(rest, new_body):
            return True
        if verb in ("went", "gone", "been", "go") and _BACK.match(rest) and _RETURNED.search(
                _first_clause(new_body)):
            # "never went back to Jamaica" / "went back once, in 1987".
            return True
        if verb in _GENERAL_VERBS or travel:
            continue
        stem = _stem(verb)
        for said in re.finditer(r"[A-Za-z']+", new_body):
            if _stem(said.group(0)) == stem:
                clause = re.split(r"[,.;!?]", new_body[said.end():], maxsplit=1)[0]
                if _same_object(rest, clause):
                    return True
    return False


# --- "never" about going anywhere: more often a manner of speaking than a fact -------------
# "never left Ireland in her life", "never learned to drive", "never got on a plane again",
# "never lived anywhere but New Orleans", "always lived in the same house": on the labelled
# family sets (docs/quality.md, Round 4) 19 such statements were later contradicted or
# corrected by the family and 2 were true, so they are not filed at all (a later journey,
# drive or move is filed as it is said).
_DRIVE_VERBS = frozenset(["drive", "drove", "driven", "driving", "drives"])
_LICENCE = re.compile(r"^\s*(?:a\s+|her\s+|his\s+)?(?:driving\s+)?licen[cs]e\b", re.IGNORECASE)
_ELSEWHERE = re.compile(r"^\s*(?:anywhere|anyplace|somewhere|elsewhere)\b|"
                        r"^\s*(?:in\s+|at\s+)?(?:any\s+(?:other\s+)?(?:place|town|city|country)|"
                        r"outside)\b", re.IGNORECASE)
# "never left her side", "never left the house without lipstick", "never left a tip": not a
# journey.
_NOT_A_JOURNEY = re.compile(r"^\s*(?:an?\s|(?:her|his|their|my|our)\s+(?:side|mark)\b)|"
                            r"\b(?:without|behind|alone|side|tip|note|mark|trace)\b",
                            re.IGNORECASE)


def mobility_absolute(content: str) -> bool:
    """Whether `content` says of its subject that they never left a place, travelled, flew,
    went back, drove (or learned to), had a driving licence or lived anywhere else, or that
    they always lived in one place."""
    subject = _SUBJECT.match(content.strip())
    if subject is None:
        return False
    for absolute in _ABSOLUTE.finditer(content.strip()[subject.end():]):
        verb = absolute.group("verb").lower()
        rest = absolute.group("rest")
        if absolute.group("word").lower() == "always":
            if verb in _RESIDENCE_VERBS:
                return True
            continue
        stem = _stem(verb)
        if stem in _TRAVEL_STEMS and _NOT_A_JOURNEY.search(rest):
            continue
        if (stem in _TRAVEL_STEMS or verb in _DRIVE_VERBS
                or (verb in ("went", "been", "gone", "go", "got", "set", "stepped")
                    and (_FAR.search(rest) or _BACK.match(rest) or _NEVER_FLEW.match(rest)))
                or (verb in ("had", "got", "held") and _LICENCE.match(rest))
                or (verb in _RESIDENCE_VERBS | {"moved", "move"} and (
                    _ELSEWHERE.match(rest) or not rest.strip()))):
            return True
    return False
