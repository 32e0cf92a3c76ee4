"""The offline, deterministic LLM provider: extractive summaries and rule-based fact extraction.

Seed 004 asks for a v1 with no LLM dependency; this is what runs by default. The
rules, and how well they do on the labelled set in tests/data/, are in docs/quality.md.
"""

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from memory_site.core.ai.base import ChatReply, ExtractedFact, SummaryExtraction, TranscriptLine
from memory_site.core.ai.tokens import count_tokens

DEFAULT_SUMMARY_TOKEN_LIMIT = 200

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'“(]?[A-Z0-9])|\n+")
_ABBREVIATION = re.compile(r"\b(Mr|Mrs|Ms|Dr|St|Jr|Sr|Mt)\.$")

# --- sentence features ---------------------------------------------------------------------
_YEAR = re.compile(r"\b(1[6-9]\d\d|20\d\d)\b")
_DATE = re.compile(
    r"\b(1[6-9]\d\d|20\d\d|(?:19|20)?\d0'?s|January|February|March|April|May|June|July|August|"
    r"September|October|November|December|Christmas|Easter|Thanksgiving|birthday|"
    r"anniversary|\d+ years? old|age \d+)\b"
)
_PLACE = re.compile(r"\b(?:in|at|to|from|near|on)\s+(?:the\s+)?[A-Z][\w'.]+")
_FIRST_PERSON = re.compile(r"\b(I|my|me|we|our|us)\b")
_CAPITALIZED = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][a-z]+")
_FILLER = re.compile(
    r"^(ok(ay)?|yes|yeah|no|thanks?( you)?|hi|hello|hey|right|sure|hmm+|ha(ha)*|wow)\b[\s.!]*$",
    re.IGNORECASE,
)
_NOT_NAMES = frozenset(
    ["I", "I'm", "I've", "I'd", "I'll", "The", "A", "An", "And", "But", "So", "Then", "When", "Where", "What", "Who", "Why", "How", "Yes", "No", "Oh", "Well", "She", "He", "Her", "His", "They", "Their", "We", "Our", "My", "It", "Its", "This", "That", "There", "Every", "Once", "Actually", "Sorry", "Maybe", "Perhaps", "Always", "Never", "Hi", "Hello", "Thanks", "Thank"]
)

# --- who is who ----------------------------------------------------------------------------
# Kinship words by family. Which family (if any) means the legacy is decided per conversation
# (see kinship_aliases); a family that does stands for them in every form ("my mom, Rose"
# makes "Mother" and "Mama" Rose too).
KIN_FAMILIES: dict[str, tuple[str, ...]] = {
    "mother": ("mom", "mother", "mum", "mommy", "mummy", "mama", "mamma", "momma", "ma"),
    "father": ("dad", "father", "daddy", "papa", "pa", "pop", "pops"),
    "grandmother": ("grandma", "grandmother", "granny", "gran", "nana", "nanna", "nan",
                    "grandmom", "grandmama"),
    "grandfather": ("grandpa", "grandfather", "granddad", "grandad", "gramps", "grandpop",
                    "grandpapa"),
    "aunt": ("aunt", "auntie", "aunty"),
    "uncle": ("uncle",),
    "sister": ("sister", "sis"),
    "brother": ("brother",),
    "wife": ("wife",),
    "husband": ("husband",),
    "daughter": ("daughter",),
    "son": ("son",),
    "cousin": ("cousin",),
}
_FEMALE_FAMILIES = frozenset(["mother", "grandmother", "aunt", "sister", "wife", "daughter"])
_MALE_FAMILIES = frozenset(["father", "grandfather", "uncle", "brother", "husband", "son"])
# Without a link to the legacy's name, only a parent or grandparent may be the person being
# remembered: a sibling, child, spouse, aunt, uncle or cousin the user mentions is far more
# often someone else in the story ("My husband and I visited her every Sunday").
UNLINKED_FAMILIES = ("mother", "father", "grandmother", "grandfather")
_FAMILY_OF = {word: family for family, words in KIN_FAMILIES.items() for word in words}
# Bare and lower-case, these still name the user's own relative ("when mom retired"); other
# kinship words need "my"/"our" or a capital ("my mother", "Mother"), not "a mother of three".
_NAME_LIKE_KIN = frozenset(["mom", "dad", "mum", "mommy", "mummy", "daddy", "mama", "momma",
                            "papa", "grandma", "grandpa", "granny", "nana", "nanna", "grandad",
                            "granddad", "gramps", "grandmom"])
KIN_TITLES = ("Mrs.", "Mrs", "Mr.", "Mr", "Ms.", "Ms", "Dr.", "Dr",
              *(word.capitalize() for word in _FAMILY_OF))
OTHER_PEOPLE = (*_FAMILY_OF, "friend", "neighbor", "neighbour", "boss", "kid", "children",
                "niece", "nephew", "grandson", "granddaughter", "parent", "grandparent")

_HEDGE = re.compile(
    r"\b(if|would have|could have|should have|might|maybe|perhaps|probably|possibly|"
    r"i think|i guess|i suppose|i wonder|wonder if|i wish|not sure|imagine|supposedly|"
    r"apparently|were here|i believe|seems|seemed to me)\b",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^(who|what|when|where|why|how|which|do|does|did|can|could|would|will|is|are|was|were|"
    r"should|have|has)\b",
    re.IGNORECASE,
)
_LEAD_IN = re.compile(
    r"^(?:and|but|so|well|oh|yes|yeah|also|plus|anyway|honestly|you know|very|sure|"
    r"i remember(?: that| how| when)?|i know(?: that)?|i'll never forget(?: that| how)?|"
    r"i still remember(?: that| how)?)\b[,.!]?\s+",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"^(?:no,?\s+)?(?:actually|sorry,?\s+i\s+mean(?:t)?|sorry|i\s+mean(?:t)?|correction:?|"
    r"wait,?\s+no|no\s+wait|oops|my mistake)\b[,:.!]?\s*",
    re.IGNORECASE,
)
_NOT_VALUE = re.compile(r"\bnot\s+(?:in\s+|the\s+|a\s+)?([\w'-]+)\s*\.?$", re.IGNORECASE)

# --- categories (first match wins) ---------------------------------------------------------
_CATEGORY_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("milestone", re.compile(
        r"\b(born|died|passed away|passed on|graduated|emigrated|immigrated|moved to|moved from|"
        r"came to|came home|retired|diagnosed|buried|enlisted|grew up|broke (?:his|her)|"
        r"turned \d+)\b", re.I)),
    ("occupation", re.compile(
        r"\b(worked|works|job|career|profession|employed|served in|taught(?! me| us)|teacher|nurse|"
        r"engineer|farmer|carpenter|machinist|doctor|lawyer|librarian|seamstress|firefighter|"
        r"mechanic|accountant|secretary|pastor|minister|professor|clerk|soldier|sailor|"
        r"electrician|plumber|police|opened a|ran a|ran the|owned a|owned the|business|"
        r"studied|bakery|shop|store|factory)\b", re.I)),
    ("relationship", re.compile(
        r"\b(married|marry|wedding|proposed|met|engaged|divorced|widow|widowed|husband|wife|"
        r"brothers?|sisters?|sons?|daughters?|children|kids|grandchildren|grandkids|friends?|"
        r"cousins?|taught me|raised)\b", re.I)),
    ("habit", re.compile(
        r"\b(every (?:morning|day|night|evening|week|weekend|sunday|monday|tuesday|wednesday|"
        r"thursday|friday|saturday|spring|summer|fall|autumn|winter|year|christmas)|"
        r"each (?:morning|day|night|week)|always|never|used to|daily|weekly|without fail|"
        r"every \w+ at)\b", re.I)),
    ("hobby", re.compile(
        r"\b((?:loved|enjoyed|liked) (?:to )?\w+ing|played|plays|grew(?! up)|fishing|gardening|"
        r"knitting|"
        r"painting|painted|sewing|quilting|woodworking|hiking|camping|hunting|bowling|golf|"
        r"crossword|puzzles|chess|bridge|dancing|singing|sang|choir|coached|collected|"
        r"collecting|photography|birdwatching|mahjong|cello|piano|guitar|violin|trumpet)\b",
        re.I)),
    ("preference", re.compile(
        r"\b(favou?rite|loved|liked|hated|disliked|preferred|adored|enjoyed|fond of|"
        r"couldn't stand|could not stand|can't stand)\b", re.I)),
    ("personality", re.compile(
        r"\b(kind|kindest|generous|stubborn|funny|patient|quiet|shy|strict|gentle|warm|honest|"
        r"brave|loud|proud|protective|caring|loving|humble|witty|cheerful|serious|sensitive|"
        r"tough|sweet|grumpy|stern|calm|hardworking|hard-working|curious|clever|smart|wise|"
        r"sense of humou?r|temper|personality)\b", re.I)),
)


def split_sentences(text: str) -> list[str]:
    """Sentences of `text`, not split after abbreviations such as "St." or "Mrs."."""
    parts = [p.strip() for p in _SENTENCE.split(text.strip()) if p and p.strip()]
    # A sentence as its parts: whether it ends in an abbreviation is a question about its
    # last part, and joining once keeps "Mr. Mr. Mr. …" linear.
    sentences: list[list[str]] = []
    for part in parts:
        if sentences and _ABBREVIATION.search(sentences[-1][-1]):
            sentences[-1].append(part)
        else:
            sentences.append([part])
    return [" ".join(sentence) for sentence in sentences]


def is_question(sentence: str) -> bool:
    sentence = sentence.strip()
    return sentence.endswith("?") or (
        bool(_QUESTION_START.match(sentence)) and not sentence.endswith((".", "!"))
    )


def display_name(legacy_name: str) -> str:
    """The name facts are written with: the first name, without a quoted nickname."""
    plain = re.sub(r'["“(][^"”)]*["”)]', " ", legacy_name).split()
    return plain[0] if plain else legacy_name.strip()


# --- summaries -----------------------------------------------------------------------------


def sentence_score(sentence: str, legacy_terms: Sequence[str] = ()) -> int:
    """Higher for sentences that carry names, dates, places and first-person statements."""
    if _FILLER.match(sentence):
        return -5
    score = 0
    if _DATE.search(sentence):
        score += 3
    if _PLACE.search(sentence):
        score += 2
    names = [w for w in _CAPITALIZED.findall(sentence) if w not in _NOT_NAMES]
    if names:
        score += 2
    if legacy_terms and re.search(
        r"\b(" + "|".join(re.escape(t) for t in legacy_terms) + r")\b", sentence, re.I
    ):
        score += 2
    if _FIRST_PERSON.search(sentence):
        score += 1
    if is_question(sentence):
        score -= 3
    if len(sentence.split()) < 4:
        score -= 2
    return score


def _choose(candidates: list[tuple[int, int, str]], token_limit: int,
            newest_first: bool) -> list[tuple[int, str]]:
    """Pick (sequence, sentence) pairs by score within the token limit, in conversation order."""
    ranked = sorted(
        candidates, key=lambda c: (-c[0], -c[1] if newest_first else c[1])
    )
    chosen: list[tuple[int, str]] = []
    used = 0
    for score, sequence, sentence in ranked:
        if score < 0:
            continue
        cost = count_tokens(sentence) + 3
        if used + cost > token_limit:
            continue
        chosen.append((sequence, sentence))
        used += cost
    chosen.sort(key=lambda c: c[0])
    return chosen


def _user_candidates(lines: Sequence[TranscriptLine], legacy_terms: Sequence[str]
                     ) -> list[tuple[int, int, str]]:
    return [
        (sentence_score(sentence, legacy_terms), line.sequence, sentence)
        for line in lines if line.role == "user"
        for sentence in split_sentences(line.content)
    ]


def extractive_summary(lines: Sequence[TranscriptLine], token_limit: int = DEFAULT_SUMMARY_TOKEN_LIMIT,
                       legacy_terms: Sequence[str] = ()) -> str:
    """The user's most informative sentences, in conversation order, within `token_limit`."""
    chosen = _choose(_user_candidates(lines, legacy_terms), token_limit, newest_first=False)
    return " ".join(sentence for _, sentence in chosen)


_SUMMARY_LINE = re.compile(r"^\[(\d+)\]\s+(.+)$")


def rolling_summary(*, previous_summary: str | None, messages: Sequence[TranscriptLine],
                    window_start: int, token_limit: int, legacy_terms: Sequence[str] = ()) -> str:
    """Seed 002's incremental summary, offline: one `[sequence] sentence` line per kept
    sentence, so that what falls before `window_start` can be dropped exactly."""
    kept: list[tuple[int, int, str]] = []
    for line in (previous_summary or "").splitlines():
        match = _SUMMARY_LINE.match(line.strip())
        if match and int(match.group(1)) >= window_start:
            sentence = match.group(2)
            kept.append((sentence_score(sentence, legacy_terms), int(match.group(1)), sentence))
    new = [m for m in messages if m.sequence >= window_start]
    candidates = kept + _user_candidates(new, legacy_terms)
    chosen = _choose(candidates, token_limit, newest_first=True)
    if not chosen:
        last = max((m.sequence for m in messages), default=window_start)
        return f"[{last}] No details about the person have been shared yet."
    return "\n".join(f"[{sequence}] {sentence}" for sequence, sentence in chosen)


# --- fact extraction -----------------------------------------------------------------------


def _alternation(words: Sequence[str]) -> str:
    if not words:
        return "(?!)"  # an empty alternation would match everywhere; this matches nothing
    return "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))


# Patterns that end where a word starts ("my " before "mom", "not " before "a word") match at
# most 57 characters: their longest words and runs of up to 20 spaces. Searching only the last
# _LOOKBACK characters before the word finds exactly what searching all the text before it
# would, in constant time per word instead of time proportional to the text (a 20,000-character
# message of "mom mom …" took seconds). The search sees the character just before its window,
# so "\b" and "(?<!…)" at the window's start still work.
_LOOKBACK = 60


def _ends_at(pattern: re.Pattern[str], text: str, position: int) -> bool:
    """Whether `pattern` (anchored with "$") matches text that ends at `position`."""
    return bool(pattern.search(text, max(0, position - _LOOKBACK), position))


# --- kinship: which word means the legacy --------------------------------------------------
_NAME_WORD = r"[A-Z][a-zA-Z]*(?:['’][A-Z][a-zA-Z]*)?"
_PROPER_NAME = rf"{_NAME_WORD}(?:[ -]{_NAME_WORD}){{0,2}}"
_NOT_PERSON = frozenset([
    *_NOT_NAMES, "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December", "Christmas", "Easter", "Thanksgiving", "God", "Lord",
])
_KIN_ADJECTIVE = r"(?:late|dear|beloved|sweet|favou?rite|darling|wonderful|own|old)"
_KIN_ANY = _alternation(list(_FAMILY_OF))
# "Ma'am", "pop music" and "Mother's Day" are not relatives.
_NOT_KIN_AFTER = r"(?!['’]am\b)(?!\s+(?:music|art|songs?|stars?|culture|quiz|corn)\b)(?!['’]s\s+Day\b)"
_KIN_OCCURRENCE = re.compile(rf"(?<![\w'’-])(?i:{_KIN_ANY})(?![\w-]){_NOT_KIN_AFTER}")
# Both searched with _ends_at: at most 57 characters.
_USERS_RELATIVE = re.compile(
    rf"(?<![\w'’])(?:my|our)\s{{1,20}}(?:{_KIN_ADJECTIVE}\s{{1,20}})?$", re.IGNORECASE)
# "her dad" is the legacy's father, "Rose's mother" hers, "a mother of three" nobody's.
_SOMEONE_ELSES = re.compile(
    r"(?:\b(?:her|his|their|your|its|whose|a|an|the|this|that|every|one|no|any|some|another)"
    r"|['’]s)\s{1,20}(?:(?:late|own|dear|old|young|new|real|birth|step|biological)\s{1,20})?$",
    re.IGNORECASE,
)
_RELIGIOUS_NAME = re.compile(rf"\s+{_NAME_WORD}")
_RELIGIOUS_TITLES = frozenset(["Father", "Mother", "Sister", "Brother"])
_NAME_AFTER_KIN = (
    re.compile(rf"[ \t]+({_PROPER_NAME})"),  # "Grandma Ruth", "my brother Tom"
    re.compile(rf"\s*,\s*({_PROPER_NAME})\s*(?=[,.;:!?)]|$)(?!,\s*(?:and|or)\b)"),  # "my mom, Rose,"
    re.compile(rf"\s*\(\s*({_PROPER_NAME})\s*\)"),  # "Mom (Rose)"
    re.compile(rf"['’]s\s+(?:(?:first|full|real|given)\s+)?name\s+(?:was|is)\s+({_PROPER_NAME})"),
)
# "Mom was Rose." names her; "Mom was Catholic." does not, so this one only links the legacy.
_LEGACY_AFTER_KIN = re.compile(
    rf"\s+(?:was|is)\s+(?:called\s+|named\s+)?({_PROPER_NAME})\s*(?=[.;!,]|$)")
_NAME_BEFORE_KIN = re.compile(  # "Rose was my mother", "Rose, my mother, …"
    rf"(?<![\w'’])({_PROPER_NAME}),?\s+(?:(?:was|is)\s+)?(?:my|our)\s+(?:{_KIN_ADJECTIVE}\s+)?"
    rf"((?i:{_KIN_ANY}))(?![\w'’-])"
)


def _legacy_names(legacy_name: str, aliases: Sequence[str]) -> tuple[str, ...]:
    """The legacy's names: full name, first name, nicknames (an alias that is a kinship word,
    such as "Nana", is a kinship alias instead)."""
    names = dict.fromkeys([legacy_name.strip(), *aliases, display_name(legacy_name)])
    return tuple(n.strip() for n in names if n.strip() and n.strip().lower() not in _FAMILY_OF)


def _who(name: str, names: Sequence[str], *, name_last: bool) -> str | None:
    """Whether a run of capitalised words next to a kinship word is the legacy's name, another
    person's name, or not a name ("Mom, Dad and I", "Dad Friday")."""
    words = name.split()
    runs = ([" ".join(words[i:]) for i in range(len(words))] if name_last
            else [" ".join(words[:j]) for j in range(len(words), 0, -1)])
    if any(run in names for run in runs):
        return "legacy"
    word = words[-1] if name_last else words[0]
    if word in _NOT_PERSON or word.lower() in _FAMILY_OF:
        return None
    return "other"


@dataclass
class _KinUses:
    """The kinship words a user used for their own relatives, by family, and which families
    they tied to the legacy's name or to another name."""

    words: dict[str, list[str]] = field(default_factory=dict)
    legacy_links: set[str] = field(default_factory=set)
    other_links: set[str] = field(default_factory=set)

    def link(self, family: str, who: str | None) -> None:
        if who == "legacy":
            self.legacy_links.add(family)
        elif who == "other":
            self.other_links.add(family)

    def read(self, text: str, names: Sequence[str]) -> None:
        """Every kinship word of the user's own relatives in `text`, and its links."""
        for match in _KIN_OCCURRENCE.finditer(text):
            # Positions into `text`, not slices of it: a slice would copy the whole text
            # before or after every kinship word.
            word, start, end = match.group(0), match.start(), match.end()
            family = _FAMILY_OF[word.lower()]
            if not _ends_at(_USERS_RELATIVE, text, start):
                if _ends_at(_SOMEONE_ELSES, text, start):
                    continue
                if not (word[0].isupper() or word.lower() in _NAME_LIKE_KIN):
                    continue
                if word in _RELIGIOUS_TITLES and _RELIGIOUS_NAME.match(text, end):
                    continue  # "Father Murphy", "Sister Mary": not the user's relative
            said = self.words.setdefault(family, [])
            if word.capitalize() not in said:
                said.append(word.capitalize())
            for pattern in _NAME_AFTER_KIN:
                named = pattern.match(text, end)
                if named:
                    self.link(family, _who(named.group(1), names, name_last=False))
                    break
            else:
                named = _LEGACY_AFTER_KIN.match(text, end)
                if named and _who(named.group(1), names, name_last=False) == "legacy":
                    self.link(family, "legacy")
        for match in _NAME_BEFORE_KIN.finditer(text):
            self.link(_FAMILY_OF[match.group(2).lower()],
                      _who(match.group(1), names, name_last=True))


class KinshipReader:
    """kinship_aliases, read a message at a time: the pipeline asks again after every batch
    of a conversation, and rereading all the messages before each batch is quadratic in the
    length of the conversation. What a message adds does not depend on the others."""

    def __init__(self, legacy_name: str, aliases: Sequence[str] = ()) -> None:
        self.legacy_name = legacy_name
        self._names = _legacy_names(legacy_name, aliases)
        self._name = re.compile(rf"\b(?:{_alternation(self._names)})\b")
        # A kinship word among the given aliases (`Dorothy "Nana" Kimball`) is a link already.
        self._given = {_FAMILY_OF[a.strip().lower()] for a in aliases
                       if a.strip().lower() in _FAMILY_OF}
        self._uses = _KinUses()
        self._named = False

    def read(self, user_texts: Iterable[str]) -> None:
        """Take in the user's next messages, in order."""
        for text in user_texts:
            self._uses.read(text, self._names)
            self._named = self._named or bool(self._name.search(text))

    def aliases(self) -> list[str]:
        """The kinship words that stand for the legacy after the messages read so far."""
        uses = self._uses
        families = (uses.legacy_links | self._given) - uses.other_links
        # "Rose loved gardening." and "Dad worked at the mill.": the person the user calls
        # Rose is not the one they call Dad, unless they say so. Only a conversation that
        # never names the legacy lets a family stand for them unlinked.
        if not families and not self._named:
            candidates = {f for f in UNLINKED_FAMILIES if f in uses.words} - uses.other_links
            families = candidates if len(candidates) == 1 else set()
        return [word for family, words in uses.words.items() if family in families
                for word in words]


def kinship_aliases(user_texts: Sequence[str], legacy_name: str,
                    aliases: Sequence[str] = ()) -> list[str]:
    """The kinship words that stand for the legacy in a conversation, from everything the
    user has said in it so far (the rules are in docs/quality.md).

    A family the user ties to the legacy's name ("my mom, Rose", "Mom (Rose)", "Rose was my
    mother", "Grandma Rose") is theirs, in all its words ("Mama", "mother"); a family tied to
    another name ("Grandma Ruth", "Dad, Henry") never is. Without such a link, a parent's or
    grandparent's family is theirs only when it is the only one of those the user speaks of
    and the user never calls the legacy by name: "Mom" and "Dad" in one conversation,
    neither linked, leaves both as other people, and so does "Rose loved gardening." next to
    "Dad worked at the mill.". Someone else's relative ("her dad", "Rose's mother") is not
    the user's and counts for nothing.
    """
    reader = KinshipReader(legacy_name, aliases)
    reader.read(user_texts)
    return reader.aliases()


def _family_gender(families: set[str]) -> str | None:
    if families and families <= _FEMALE_FAMILIES:
        return "female"
    if families and families <= _MALE_FAMILIES:
        return "male"
    return None


@dataclass
class _Legacy:
    """How the user refers to the legacy person in one batch of messages."""

    names: tuple[str, ...]
    display: str
    kin: tuple[str, ...]
    gender: str | None

    def _kin_end(self) -> str:
        """After a kinship word: not "-in-law", "Mother's Day" or "pop music", and not another
        person's name ("Grandma Ruth" is not the legacy even when "Grandma" is)."""
        names = _alternation(self.names)
        not_person = _alternation(sorted(_NOT_PERSON))
        return (rf"(?![\w-]){_NOT_KIN_AFTER}"
                rf"(?!,?\s+(?!(?:{names})\b)(?!(?:{not_person})\b)[A-Z][a-z])")

    def _kin_titles(self) -> str:
        """The legacy's kinship words used as a name: "Mom", and "mom" as people type it."""
        return _alternation([k.capitalize() for k in self.kin]
                            + [k for k in self.kin if k in _NAME_LIKE_KIN])

    def reference(self) -> re.Pattern[str]:
        """A legacy reference at the start of a text, optionally possessive."""
        titles = _alternation(KIN_TITLES)
        names = _alternation(self.names)
        kin = _alternation(self.kin)
        kin_title = self._kin_titles()
        kin_end = self._kin_end()
        # "My mom, Rose, …", "Mom Rose …", "Mom (Rose) …": one reference.
        named = rf"(?:,?\s+(?:{names})\b,?|\s*\(\s*(?:{names})\s*\))?"
        return re.compile(
            rf"^(?:(?:(?:{titles})\s+)?(?:{names})\b"
            rf"|(?:[Mm]y|[Oo]ur)\s+(?:{_KIN_ADJECTIVE}\s+)?(?:{kin}){named}{kin_end}"
            rf"|(?:[Mm]y|[Oo]ur)\s+(?:[a-z]+\s+){{1,2}}(?:{names})\b"
            rf"|(?:{kin_title}){named}{kin_end})('s)?"
        )

    def mention(self) -> re.Pattern[str]:
        """A legacy reference anywhere in a text."""
        names = _alternation(self.names)
        kin = _alternation(self.kin)
        kin_title = self._kin_titles()
        kin_end = self._kin_end()
        return re.compile(
            rf"\b(?:{names})\b|\b(?:[Mm]y|[Oo]ur|[Yy]our)\s+(?:{_KIN_ADJECTIVE}\s+)?(?:{kin})"
            rf"{kin_end}|\b(?:{kin_title}){kin_end}"
        )


_SENTENCE_END_MARK = re.compile(r"[.!?]")
_NEXT_SENTENCE_PRONOUN = re.compile(r"[.!?]\s+(She|He|Her|His)\b")
_SAME_SENTENCE_PRONOUN = re.compile(r"\b(she|he)\b")


def _name_gender(names: Sequence[str], text: str) -> str | None:
    """The legacy's gender from "she"/"he" right after their name ("Did Rose keep a diary?
    She kept it…"): the pronoun that starts the next sentence, else the last lower-case one
    in the name's own sentence; when every such pronoun agrees.

    Each sentence is read once, from its first mention of the name: a later mention in the
    same sentence finds the same pronoun or none, and scanning to the sentence end from
    every mention takes quadratic time on a long text without punctuation ("Rose Rose …").
    """
    name = re.compile(rf"\b(?:{_alternation(names)})\b")
    words: set[str] = set()
    position = 0
    while found := name.search(text, position):
        mark = _SENTENCE_END_MARK.search(text, found.end())
        stop = mark.start() if mark else len(text)
        following = _NEXT_SENTENCE_PRONOUN.match(text, stop)
        if following:
            words.add(following.group(1).lower())
            position = following.end()
            continue
        pronouns = _SAME_SENTENCE_PRONOUN.findall(text, found.end(), stop)
        if pronouns:
            words.add(pronouns[-1])
        position = stop + 1
    genders = {"female" if word in ("she", "her") else "male" for word in words}
    return genders.pop() if len(genders) == 1 else None


def _legacy_for(legacy_name: str, aliases: Sequence[str], lines: Sequence[TranscriptLine]) -> _Legacy:
    """The legacy in one batch: the kinship families it was given, plus those the batch's
    user messages link to the legacy's name, minus those they link to someone else; a given
    family the batch does not link is dropped when its gender contradicts how the batch
    speaks of the legacy by name ("Did Rose keep a diary?" — "She kept it…" — "Dad bought
    her a red Chevy": Dad is not Rose)."""
    names = _legacy_names(legacy_name, aliases)
    given = {_FAMILY_OF[a.strip().lower()] for a in aliases if a.strip().lower() in _FAMILY_OF}
    uses = _KinUses()
    for line in lines:
        if line.role == "user":
            uses.read(line.content, names)
    name_gender = _name_gender(
        names, " ".join(line.content for line in lines if line.role in ("user", "assistant")))
    if name_gender:
        given = {f for f in given if _family_gender({f}) in (None, name_gender)}
    families = (given | uses.legacy_links) - uses.other_links
    kin = tuple(word for family in sorted(families) for word in KIN_FAMILIES[family])
    # "she"/"he" fit the legacy by their kinship family, else by the pronouns after their name.
    gender = _family_gender(families) or name_gender
    return _Legacy(names=names, display=display_name(legacy_name), kin=kin, gender=gender)


def _strip_lead_in(text: str) -> str:
    previous = None
    while previous != text:
        previous = text
        text = _LEAD_IN.sub("", text, count=1)
    return text


@dataclass
class _Subject:
    kind: str  # "legacy", "pronoun", "other" or "none"
    start: int
    end: int
    possessive: bool
    gender: str | None = None  # of another person, when a kinship word tells it


_ADVERBIAL_START = re.compile(
    r"^(?:every|each|on|in|after|before|during|back|once|later|then|at|by|since|for|when|"
    r"growing up|as a)\b",
    re.IGNORECASE,
)
_PRONOUN = re.compile(r"^(She|He|Her|His)\b", re.IGNORECASE)
_OTHER_SUBJECT = re.compile(
    rf"^(?:I|We|They|You|(?:[Mm]y|[Oo]ur|[Hh]is|[Hh]er)\s+(?:\w+\s+)?(?:{_alternation(OTHER_PEOPLE)})s?)\b"
)
# A kinship word that is not the legacy's ("Dad", "Grandma Ruth", "her dad", "my brother").
_OTHER_KIN_SUBJECT = re.compile(
    rf"^(?:(?:[Mm]y|[Oo]ur|[Hh]er|[Hh]is|[Tt]heir|[Yy]our)\s+(?:[a-z]+\s+)?)?"
    rf"(?P<kin>(?i:{_KIN_ANY}))s?(?![\w-]){_NOT_KIN_AFTER}"
)
_OTHER_NAMED_SUBJECT = re.compile(
    r"^([A-Z][a-z]+)(?:\s+[A-Z][a-z]+)?\s+(?:was|is|had|has|said|says|thinks|lives|went)\b"
)


def _find_subject(body: str, reference: re.Pattern[str]) -> _Subject:
    """Who the sentence is about: the legacy, a pronoun, someone else, or nobody clear."""
    starts = [0]
    comma = body.find(",")
    # "Once, in 1988, he…" has its subject after the comma; "I want to tell you about my
    # mom, Rose." has it before (the user).
    if 0 < comma <= 60 and not re.match(r"(?:I|We|You|They)\b", body):
        starts.append(comma + 1)
    if _ADVERBIAL_START.match(body):
        # "Every Sunday she baked…", "Once, in 1988, he broke…": try each of the next words.
        starts += [m.end() for m in re.finditer(r"[\s,]+", body[:80])]
    for start in starts:
        offset = start + len(body[start:]) - len(body[start:].lstrip())
        rest = body[offset:]
        match = reference.match(rest)
        if match:
            return _Subject("legacy", offset, offset + match.end(), bool(match.group(1)))
        other = _OTHER_KIN_SUBJECT.match(rest)
        if other:
            family = _FAMILY_OF[other.group("kin").lower()]
            return _Subject("other", 0, 0, False, _family_gender({family}))
        pronoun = _PRONOUN.match(rest)
        if pronoun:
            word = pronoun.group(1).lower()
            return _Subject("pronoun:" + word, offset, offset + pronoun.end(),
                            word in ("her", "his"))
    named = _OTHER_NAMED_SUBJECT.match(body)
    if _OTHER_SUBJECT.match(body) or (named and named.group(1) not in _NOT_NAMES):
        return _Subject("other", 0, 0, False)
    return _Subject("none", 0, 0, False)


def _pronoun_fits(word: str, legacy: _Legacy) -> bool:
    female = word in ("she", "her")
    if legacy.gender is None:
        return True
    return female == (legacy.gender == "female")


_TRAILING_CLAUSE = re.compile(r",\s*(?:not\b|so\b|but\s+i\b|and\s+i\b).*$", re.IGNORECASE)
_EMPTY_ENDINGS = frozenset(["it", "that", "this", "so", "too", "did", "does", "do", "tried",
                           "was", "is", "had", "has", "one", "them", "him", "her"])


def _says_something(content: str) -> bool:
    """ "She did." or "Rose loved it." carry no fact on their own."""
    words = re.findall(r"[A-Za-z0-9']+", content)
    return len(words) >= 3 and words[-1].lower() not in _EMPTY_ENDINGS


def _rewrite(body: str, subject: _Subject, display: str) -> str:
    name = f"{display}'s" if subject.possessive else display
    text = body[: subject.start] + name + body[subject.end:]
    # "…the cello, not the violin" and "…, so we never left" say nothing more about the person.
    text = _TRAILING_CLAUSE.sub("", text.rstrip(".!"))
    text = " ".join(text.split()).strip()
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!")) else text.rstrip(",;:") + "."


# An object pronoun left in a fact ("Rose grew them by the back door.") points at nothing
# once the fact stands alone. "it" followed by a verb is a dummy subject ("…said it was…"),
# and "that"/"this" are pronouns only before a pause or a preposition ("did that every day"),
# not as "that she…".
_PAUSE_OR_PREPOSITION = (
    r"(?=\s*(?:[.!,;]|$)|\s+(?:by|in|at|on|for|with|to|from|every|each|all|until|again|too|"
    r"often|always)\b)"
)
_OBJECT_PRONOUN = re.compile(
    rf"\b(?:(?P<plural>them\b|those\b{_PAUSE_OR_PREPOSITION})"
    rf"|it\b(?!'s|\s+(?:was|is|had|has|seemed|felt|looked|took|became|would|will)\b)"
    rf"|(?:that|this)\b{_PAUSE_OR_PREPOSITION})",
    re.IGNORECASE,
)
_DETERMINER = re.compile(r"\b(the|a|an|her|his|their|this|that|these|those)\s+", re.IGNORECASE)
_PHRASE_WORDS = re.compile(r"[A-Za-z][\w'-]*(?:\s+[A-Za-z][\w'-]*){0,2}")
_PHRASE_STOP = re.compile(
    r"^(?:by|in|at|on|for|with|to|from|of|about|and|or|but|was|were|is|are|had|has|have|that|"
    r"which|who|when|while|every|each|because|she|he|it|they|we|i|you|so|as|after|before|than|"
    r"then|not|never|always|very|a|an|the|her|his|their|these|those)$",
    re.IGNORECASE,
)
_PROPER_NOUN = re.compile(r"(?<=\s)[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
# Searched with _ends_at, before a determiner: at most 25 characters.
_NEGATION_BEFORE = re.compile(r"\b(?:not|no|never)\s{1,20}$", re.IGNORECASE)
_COPULA_BEFORE = re.compile(r"\b(?:was|is|were|are)\s{1,20}$", re.IGNORECASE)


@dataclass
class _Antecedent:
    start: int
    end: int
    text: str
    plural: bool
    kind: bool = False  # "…was the peony": a kind, which "them" may refer to


def _plural_noun(word: str) -> bool:
    return word.lower().endswith("s") and not word.lower().endswith(("ss", "us", "is"))


def _pluralize(word: str) -> str:
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


def _antecedents(sentence: str, excluded: re.Pattern[str]) -> list[_Antecedent]:
    """Noun phrases of `sentence` a later pronoun may point at: a determiner and up to three
    words ("the peony", "her old trowel"), or a proper name ("Moon River"); not the person,
    and not a negated phrase."""
    found: list[_Antecedent] = []
    for match in _DETERMINER.finditer(sentence):
        phrase = _PHRASE_WORDS.match(sentence, match.end())
        # "Not a word." names nothing that a later "it" could be.
        if phrase is None or _ends_at(_NEGATION_BEFORE, sentence, match.start()):
            continue
        words: list[str] = []
        for word in phrase.group(0).split():
            if _PHRASE_STOP.match(word):
                break
            words.append(word)
        if not words:
            continue
        text = f"{match.group(1)} {' '.join(words)}"
        if excluded.search(" ".join(words)):
            continue
        end = match.end() + len(" ".join(words))
        kind = match.group(1).lower() in ("the", "a", "an") and _ends_at(
            _COPULA_BEFORE, sentence, match.start())
        found.append(_Antecedent(match.start(), end, text, _plural_noun(words[-1]), kind))
    # A proper name inside a phrase above is part of it. The phrases come in order of start,
    # so the furthest end among those starting before a name tells (in log time, where
    # checking every phrase per name is quadratic on a long sentence).
    starts = [a.start for a in found]
    reach = list(accumulate((a.end for a in found), max))
    for match in _PROPER_NOUN.finditer(sentence):
        name = match.group(0)
        if name.split()[0] in _NOT_NAMES or excluded.search(name):
            continue
        index = bisect_right(starts, match.start()) - 1
        if index >= 0 and reach[index] > match.start():
            continue
        found.append(_Antecedent(match.start(), match.end(), name, False))
    return sorted(found, key=lambda a: a.end)


def _resolve_object_pronoun(body: str, after: int, previous: str | None,
                            excluded: re.Pattern[str]) -> str | None:
    """`body` with an object pronoun after the subject replaced by what it points at in the
    previous sentence ("She grew them…" after "…was the peony." → "She grew peonies…");
    the body unchanged when it has no such pronoun; None when the pronoun points at nothing
    there."""
    pronoun = _OBJECT_PRONOUN.search(body, after)
    if pronoun is None:
        return body
    plural = pronoun.group("plural") is not None
    candidates = _antecedents(previous or "", excluded)
    agreeing = [a for a in candidates if a.plural == plural]
    if agreeing:
        chosen = agreeing[-1]
        determiner, _, rest = chosen.text.partition(" ")
        # "a quilt … she gave it away": once it is known, it is "the quilt".
        text = f"the {rest}" if determiner.lower() in ("a", "an") and rest else chosen.text
    elif plural and candidates and candidates[-1].kind:
        # "Her favorite flower was the peony. She grew them…": the kind, in the plural.
        *words, head = candidates[-1].text.split()[1:]
        text = " ".join([*words, _pluralize(head)])
    else:
        return None
    return body[: pronoun.start()] + text + body[pronoun.end():]


def categorize(content: str) -> str:
    """Seed 000's category of a fact, from the first rule whose words it contains."""
    for category, pattern in _CATEGORY_RULES:
        if pattern.search(content):
            return category
    return "other"


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if len(w) > 2}


def _values(text: str) -> dict[str, list[str]]:
    return {
        "year": _YEAR.findall(text),
        "number": re.findall(r"\b\d+\b", text),
        "proper": [w for w in re.findall(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*", text[1:])
                   if w.split()[0] not in _NOT_NAMES],
    }


def _taken_back(body: str) -> tuple[str, str] | None:
    """The value a correction takes back ("1962, not 1961" → "1961") and what it says before
    that ("1962")."""
    match = _NOT_VALUE.search(body)
    if match is None:
        return None
    # The comma and spaces before "not" are trimmed here: as ",?\s*" at the pattern's start,
    # they made every position of a long run of spaces rescan the rest of the run.
    return match.group(1), body[: match.start()].rstrip().removesuffix(",")


# A correction fixes one of the last _CORRECTION_REACH facts of its batch (what the user has
# just said): looking further back made every correction reread every fact, quadratic in a
# batch of long pasted messages.
_CORRECTION_REACH = 50


class _BatchFacts:
    """A batch's facts so far, with a count of each content (a correction can give one fact
    another's words), so that a duplicate is found without rereading them all."""

    def __init__(self) -> None:
        self.facts: list[ExtractedFact] = []
        self._contents: Counter[str] = Counter()

    def __contains__(self, content: str) -> bool:
        return self._contents[content] > 0

    def recent(self) -> list[tuple[int, ExtractedFact]]:
        """The facts a correction may reach, oldest first, with their indices."""
        start = max(0, len(self.facts) - _CORRECTION_REACH)
        return list(enumerate(self.facts[start:], start))

    def put(self, fact: ExtractedFact, index: int | None = None) -> None:
        """Append `fact`, or put it in place of the fact at `index`."""
        if index is None:
            self.facts.append(fact)
        else:
            self._contents[self.facts[index].content] -= 1
            self.facts[index] = fact
        self._contents[fact.content] += 1


def _apply_correction(found: _BatchFacts, body: str) -> bool:
    """A fragment such as "it was 1962" or "1962, not 1961" replaces the value of the same
    kind in the most recent fact that has one. Returns whether a fact changed."""
    taken_back = _taken_back(body)
    old = taken_back[0] if taken_back else None
    body = taken_back[1] if taken_back else body
    new_values = _values(body)
    for kind in ("year", "number", "proper"):
        if not new_values[kind]:
            continue
        new = new_values[kind][-1]
        for index, fact in reversed(found.recent()):
            content = fact.content
            in_content = [old] if old and old in content else []
            targets = in_content if old else _values(content)[kind]
            targets = [t for t in targets if t and t != display_name(content)]
            if targets:
                target = targets[-1]
                updated = content.replace(target, new, 1)
                found.put(ExtractedFact(category=fact.category, content=updated), index)
                return True
    return False


def _replace_similar(found: _BatchFacts, fact: ExtractedFact) -> None:
    """A corrected full statement replaces the earlier fact it corrects (the most similar one)."""
    words = _content_words(fact.content)
    best, best_score = None, 0.0
    for index, other in found.recent():
        other_words = _content_words(other.content)
        union = words | other_words
        score = len(words & other_words) / len(union) if union else 0.0
        if score > best_score:
            best, best_score = index, score
    found.put(fact, best if best_score >= 0.3 else None)


def extract_facts(lines: Sequence[TranscriptLine], legacy_name: str,
                  aliases: Sequence[str] = ()) -> list[ExtractedFact]:
    """Facts about the legacy person in what the USER said.

    A sentence yields a fact when its subject is the legacy person: by name or nickname
    ("Grandma Peggy", "my aunt Evelyn"), by a kinship word of a family in `aliases` (see
    kinship_aliases) or one the batch itself links to their name ("my mom, Rose"), or by
    "she"/"he"/"her"/"his" right after the person was mentioned (by the user or the
    assistant). Any other kinship word is another person ("Dad", "Grandma Ruth", "her dad"),
    and so is a kinship word followed by a name that is not the legacy's. The user may be in it
    ("Rose taught me to play the piano"). Questions, hypotheticals and hedges ("if she
    had…", "maybe", "I think"), sentences about the user or someone else, and sentences whose
    object is a pronoun ("them", "it", "that") that the previous sentence does not resolve
    are skipped; a resolved one is replaced ("She grew them" after "…was the peony." →
    "Rose grew peonies"). A correction ("Actually, it was 1962") replaces the value it
    corrects.
    """
    legacy = _legacy_for(legacy_name, aliases, lines)
    reference = legacy.reference()
    mention = legacy.mention()
    facts = _BatchFacts()
    focus_on_legacy = False
    previous: str | None = None
    for line in lines:
        if line.role == "assistant":
            # The assistant's question sets who "she" is in the answer; its claims are not facts.
            focus_on_legacy = bool(mention.search(line.content)) or focus_on_legacy
            previous = (split_sentences(line.content) or [previous])[-1]
            continue
        if line.role != "user":
            continue
        for sentence in split_sentences(line.content):
            before, previous = previous, sentence
            correction = bool(_CORRECTION.match(sentence))
            body = _strip_lead_in(_CORRECTION.sub("", sentence, count=1).strip())
            if not body:
                continue
            subject = _find_subject(body, reference)
            about_legacy = subject.kind == "legacy" or (
                subject.kind.startswith("pronoun:") and focus_on_legacy
                and _pronoun_fits(subject.kind.split(":")[1], legacy)
            )
            if subject.kind == "other" and not body.lower().startswith(("i ", "we ")):
                # Someone else now holds "he"/"she", unless their gender tells them apart
                # ("Dad fixed the dock. She loved the lake." is still about Mom).
                focus_on_legacy = (
                    (focus_on_legacy or bool(mention.search(body)))
                    and None not in (legacy.gender, subject.gender)
                    and subject.gender != legacy.gender
                )
            elif subject.kind == "legacy" or mention.search(body):
                focus_on_legacy = True
            if is_question(sentence) or _HEDGE.search(body):
                continue
            if about_legacy:
                resolved = _resolve_object_pronoun(body, subject.end, before, mention)
                if resolved is None:
                    continue
                content = _rewrite(resolved, subject, legacy.display)
                if not _says_something(content):
                    continue
                fact = ExtractedFact(category=categorize(content), content=content)
                if fact.content in facts:
                    continue
                taken_back = _taken_back(body)
                if correction and taken_back and any(
                    taken_back[0] in f.content for _, f in facts.recent()
                ):
                    # "She retired in 1994, not 1993": fix the value where it was said.
                    _apply_correction(facts, body)
                elif correction:
                    _replace_similar(facts, fact)
                else:
                    facts.put(fact)
            elif correction and facts.facts:
                _apply_correction(facts, body)
    return facts.facts


class ExtractiveLLM:
    name = "extractive"

    def __init__(self, summary_token_limit: int | None = None):
        self._summary_token_limit = summary_token_limit

    def _token_limit(self) -> int:
        if self._summary_token_limit is not None:
            return self._summary_token_limit
        from django.conf import settings

        return getattr(settings, "EXTRACTIVE_SUMMARY_TOKEN_LIMIT", DEFAULT_SUMMARY_TOKEN_LIMIT)

    def summarize_window(
        self,
        *,
        previous_summary: str | None,
        messages: list[TranscriptLine],
        window_start: int,
        legacy_name: str,
    ) -> str:
        return rolling_summary(
            previous_summary=previous_summary, messages=messages, window_start=window_start,
            token_limit=self._token_limit(), legacy_terms=[display_name(legacy_name)],
        )

    def summarize_and_extract(
        self, *, messages: list[TranscriptLine], legacy_name: str, aliases: Sequence[str] = ()
    ) -> SummaryExtraction:
        terms = [display_name(legacy_name), *aliases]
        summary = extractive_summary(messages, self._token_limit(), terms)
        return SummaryExtraction(
            summary=summary or "The family talked without sharing details.",
            facts=extract_facts(messages, legacy_name, aliases),
        )

    def chat(self, *, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        from memory_site.core.ai.offline_chat import offline_chat_reply  # the agent side's rules

        return offline_chat_reply(messages=messages, tools=tools)
