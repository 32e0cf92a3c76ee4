"""Who is who: which kinship words stand for the legacy person, and how a batch refers to them."""

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from memory_site.core.language.names import declared_name, read_legacy_name
from memory_site.core.language.sentences import display_name
from memory_site.core.language.words import (
    FAMILY_OF,
    FEMALE_FAMILIES,
    KIN_ANY,
    KIN_FAMILIES,
    KIN_TITLES,
    MALE_FAMILIES,
    NAME_LIKE_KIN,
    NOT_KIN_AFTER,
    NOT_NAMES,
    UNLINKED_FAMILIES,
    alternation,
    ends_at,
)

_NAME_WORD = r"[A-Z][a-zA-Z]*(?:['’][A-Z][a-zA-Z]*)?"
_PROPER_NAME = rf"{_NAME_WORD}(?:[ -]{_NAME_WORD}){{0,2}}"
_NOT_PERSON = frozenset([
    *NOT_NAMES, "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December", "Christmas", "Easter", "Thanksgiving", "God", "Lord",
])
_KIN_ADJECTIVE = (r"(?:late|dear|beloved|sweet|favou?rite|darling|wonderful|own|old|little|big|"
                  r"baby|kid|younger|older|elder|eldest|youngest)")
_KIN_OCCURRENCE = re.compile(rf"(?<![\w'’-])(?i:{KIN_ANY})(?![\w-]){NOT_KIN_AFTER}")
# Both searched with ends_at: at most 57 characters.
_USERS_RELATIVE = re.compile(
    rf"(?<![\w'’])(?:my|our)\s{{1,20}}(?:{_KIN_ADJECTIVE}\s{{1,20}})?$", re.IGNORECASE)
# "her dad" is the legacy's father, "Rose's mother" hers, "a mother of three" nobody's.
_SOMEONE_ELSES = re.compile(
    r"(?:\b(?:her|his|their|your|its|whose|a|an|the|this|that|every|one|no|any|some|another)"
    r"|['’]s)\s{1,20}(?:(?:late|own|dear|old|young|new|real|birth|step|biological)\s{1,20})?$",
    re.IGNORECASE,
)
# "my mom's mom", "my dads mother": a grandparent described through a parent, so that parent
# is someone else than the person described (round 3, docs/quality.md).
_PARENT_WORDS = alternation([w for f in ("mother", "father") for w in KIN_FAMILIES[f]])
_PARENT_CHAIN = re.compile(
    rf"(?<![\w'’])(?:my|our)\s{{1,20}}(?P<kin>{_PARENT_WORDS})(?:['’]s|s)\s{{1,20}}"
    rf"(?:{_PARENT_WORDS})(?![\w'’-])", re.IGNORECASE)
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
    rf"((?i:{KIN_ANY}))(?![\w'’-])"
)


@lru_cache(maxsize=256)
def _lower_case_name_after(names: tuple[str, ...]) -> re.Pattern[str]:
    """One of the legacy's one-word names right after a kinship word, in lower case as
    families type it ("auntie tee"); capitalised names are read by _NAME_AFTER_KIN."""
    words = [n.lower() for n in names if re.fullmatch(r"[A-Za-z]+", n)]
    # Round 4: right after a kinship word, the first three letters or more of a first name
    # are a short form the table may lack ("my stepbrother cal" for Callum, "my mom deb").
    words += [word[:end] for word in words for end in range(3, len(word))]
    return re.compile(rf"[ \t]+(?:{alternation(words)})\b(?![ \t]+[A-Z])")


def _legacy_names(legacy_name: str, aliases: Sequence[str]) -> tuple[str, ...]:
    """The legacy's names: full name, first name, nicknames (an alias that is a kinship word,
    such as "Nana", is a kinship alias instead; so is the kinship word of a legacy named
    "Grandpa Joe", whose names are "Joe" and "Grandpa Joe": see _given_families)."""
    name = read_legacy_name(legacy_name)
    names = dict.fromkeys([legacy_name.strip(), *name.names, *aliases, name.display])
    return tuple(n.strip() for n in names if n.strip() and n.strip().lower() not in FAMILY_OF)


def _given_families(legacy_name: str, aliases: Sequence[str]) -> set[str]:
    """The kinship families the legacy was given: of an alias that is a kinship word
    (`Dorothy "Nana" Kimball`) or of the kinship word their name opens with ("Grandpa Joe",
    "Grandma")."""
    words = [*aliases, *read_legacy_name(legacy_name).kin]
    return {FAMILY_OF[w.strip().lower()] for w in words if w.strip().lower() in FAMILY_OF}


def _who(name: str, names: Sequence[str], *, name_last: bool) -> str | None:
    """Whether a run of capitalised words next to a kinship word is the legacy's name, another
    person's name, or not a name ("Mom, Dad and I", "Dad Friday")."""
    words = name.split()
    runs = ([" ".join(words[i:]) for i in range(len(words))] if name_last
            else [" ".join(words[:j]) for j in range(len(words), 0, -1)])
    if any(run in names for run in runs):
        return "legacy"
    word = words[-1] if name_last else words[0]
    if word in _NOT_PERSON or word.lower() in FAMILY_OF:
        return None
    return "other"


@dataclass
class _KinUses:
    """The kinship words a user used for their own relatives, by family, and which families
    they tied to the legacy's name or to another name."""

    words: dict[str, list[str]] = field(default_factory=dict)
    legacy_links: set[str] = field(default_factory=set)
    other_links: set[str] = field(default_factory=set)
    # Families put after the legacy's name ("Kathleen, my sister, …"): two of them show a
    # name shared by several people ("Kathleen, my daughter, …" too), so neither is the legacy.
    appositions: set[str] = field(default_factory=set)
    # Parents named only as the way to a grandparent ("my moms mom"): never the person unlinked.
    chained: set[str] = field(default_factory=set)

    def ambiguous(self) -> set[str]:
        return self.appositions if len(self.appositions) > 1 else set()

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
            family = FAMILY_OF[word.lower()]
            if _lower_case_name_after(names).match(text, end) and not ends_at(
                    _SOMEONE_ELSES, text, start):
                # "auntie tee", "my little brother danny", "my dad luis": the person, typed
                # in lower case.
                said = self.words.setdefault(family, [])
                if word.capitalize() not in said:
                    said.append(word.capitalize())
                self.link(family, "legacy")
                continue
            if not ends_at(_USERS_RELATIVE, text, start):
                if ends_at(_SOMEONE_ELSES, text, start):
                    continue
                if not (word[0].isupper() or word.lower() in NAME_LIKE_KIN):
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
        for match in _PARENT_CHAIN.finditer(text):
            self.chained.add(FAMILY_OF[match.group("kin").lower()])
        for match in _NAME_BEFORE_KIN.finditer(text):
            family, who = FAMILY_OF[match.group(2).lower()], _who(match.group(1), names,
                                                                   name_last=True)
            self.link(family, who)
            if who == "legacy" and text[match.end(1):match.end(1) + 1] == ",":
                self.appositions.add(family)


class KinshipReader:
    """kinship_aliases, read a message at a time: the pipeline asks again after every batch
    of a conversation, and rereading all the messages before each batch is quadratic in the
    length of the conversation. What a message adds does not depend on the others."""

    def __init__(self, legacy_name: str, aliases: Sequence[str] = ()) -> None:
        self.legacy_name = legacy_name
        self._names = _legacy_names(legacy_name, aliases)
        self._name = re.compile(rf"\b(?:{alternation(self._names)})\b")
        # "cal was my twin", "cal did his apprenticeship": the name typed in lower case, as
        # the subject of a verb (a lower-case word alone may be a word: "rose", "grace").
        lower = [n.lower() for n in self._names if re.fullmatch(r"[A-Za-z]+", n)]
        self._lower_name = re.compile(
            rf"(?<![\w'’])(?:{alternation(lower)})(?:['’]s)?\s+(?:was|is|had|has|did|went|got|"
            rf"used|loved|never|always|would|could|and\s+(?:i|me)|\w+ed)\b")
        # A kinship word among the given aliases (`Dorothy "Nana" Kimball`) or opening the
        # legacy's name ("Grandpa Joe") is a link already.
        self._given = _given_families(legacy_name, aliases)
        self._uses = _KinUses()
        self._named = False
        # The name the family calls the person by, the first time a message says it
        # ("everyone called her freda": names.declared_name); facts are written with it.
        self.called: str | None = None

    def read(self, user_texts: Iterable[str]) -> None:
        """Take in the user's next messages, in order."""
        for text in user_texts:
            self._uses.read(text, self._names)
            if self.called is None and (found := declared_name(text, self._names)):
                self.called = found.name
            self._named = (self._named or bool(self._name.search(text))
                           or bool(self._lower_name.search(text)))

    def aliases(self) -> list[str]:
        """The kinship words that stand for the legacy after the messages read so far."""
        uses = self._uses
        families = (uses.legacy_links | self._given) - uses.other_links - uses.ambiguous()
        # "Rose loved gardening." and "Dad worked at the mill.": the person the user calls
        # Rose is not the one they call Dad, unless they say so. Only a conversation that
        # never names the legacy lets a family stand for them unlinked, and only a legacy
        # given no family: "Grandma" is not Mom when "Grandma Ruth" is someone else.
        if not families and not self._named and not self._given:
            candidates = ({f for f in UNLINKED_FAMILIES if f in uses.words}
                          - uses.other_links - uses.chained)
            families = candidates if len(candidates) == 1 else set()
        return [word for family, words in uses.words.items() if family in families
                for word in words]

    def batch_aliases(self, names: Sequence[str], called: str | None = None) -> list[str]:
        """What an extraction batch is given as the person's aliases: their `names` (first
        name, nickname, short forms), the name the family calls them by (`called`, else the
        one read here) and its parts, and the kinship words read so far."""
        return list(dict.fromkeys([*names, *called_names(called or self.called),
                                   *self.aliases()]))


def called_names(called: str | None) -> list[str]:
    """The name the family calls the person by and, when it opens with a kinship word or an
    honorific ("Tante Gigi", "Aunty Moa"), the name after it: aliases the person is
    recognised by. Empty without one."""
    if not called:
        return []
    words = called.split()
    return list(dict.fromkeys([called, *([words[-1]] if len(words) > 1
                                          and len(words[-1]) > 1 else [])]))


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


def family_gender(families: set[str]) -> str | None:
    if families and families <= FEMALE_FAMILIES:
        return "female"
    if families and families <= MALE_FAMILIES:
        return "male"
    return None


@dataclass
class LegacyReference:
    """How the user refers to the legacy person in one batch of messages."""

    names: tuple[str, ...]
    display: str
    kin: tuple[str, ...]
    gender: str | None

    def _kin_end(self) -> str:
        """After a kinship word: not "-in-law", "Mother's Day" or "pop music", and not another
        person's name ("Grandma Ruth" is not the legacy even when "Grandma" is)."""
        names = alternation(self.names)
        not_person = alternation(sorted(_NOT_PERSON))
        return (rf"(?![\w-]){NOT_KIN_AFTER}"
                rf"(?!,?\s+(?!(?:{names})\b)(?!(?:{not_person})\b)[A-Z][a-z])")

    def _kin_titles(self) -> str:
        """The legacy's kinship words used as a name: "Mom", and "mom" as people type it."""
        return alternation([k.capitalize() for k in self.kin]
                            + [k for k in self.kin if k in NAME_LIKE_KIN])

    def reference(self) -> re.Pattern[str]:
        """A legacy reference at the start of a text, optionally possessive."""
        titles = alternation(KIN_TITLES)
        names = alternation(self.names)
        kin = alternation(self.kin)
        kin_title = self._kin_titles()
        kin_end = self._kin_end()
        # "My mom, Rose, …", "Mom Rose …", "Mom (Rose) …": one reference.
        # "my dad luis …", as families type it.
        lower = alternation([n.lower() for n in self.names if re.fullmatch(r"[A-Za-z]+", n)])
        named = rf"(?:,?\s+(?:{names}|{lower})\b,?|\s*\(\s*(?:{names})\s*\))?"
        return re.compile(
            rf"^(?:(?:(?:{titles})\s+)?(?:{names})\b"
            rf"|(?:[Mm]y|[Oo]ur)\s+(?:{_KIN_ADJECTIVE}\s+)?(?:{kin}){named}{kin_end}"
            rf"|(?:[Mm]y|[Oo]ur)\s+(?:[a-z]+\s+){{1,2}}(?:{names})\b"
            rf"|(?:{kin_title}){named}{kin_end})('s)?"
        )

    def mention(self) -> re.Pattern[str]:
        """A legacy reference anywhere in a text."""
        names = alternation(self.names)
        kin = alternation(self.kin)
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
    name = re.compile(rf"\b(?:{alternation(names)})\b")
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


def legacy_for(legacy_name: str, aliases: Sequence[str], user_texts: Iterable[str],
               spoken: str) -> LegacyReference:
    """The legacy in one batch: the kinship families it was given, plus those the batch's
    user messages (`user_texts`) link to the legacy's name, minus those they link to someone
    else; a given family the batch does not link is dropped when its gender contradicts how
    the batch (`spoken`: what the user and the assistant said) speaks of the legacy by name
    ("Did Rose keep a diary?" — "She kept it…" — "Dad bought her a red Chevy": Dad is not
    Rose)."""
    names = _legacy_names(legacy_name, aliases)
    given = _given_families(legacy_name, aliases)
    uses = _KinUses()
    for text in user_texts:
        uses.read(text, names)
    name_gender = _name_gender(names, spoken)
    if name_gender:
        given = {f for f in given if family_gender({f}) in (None, name_gender)}
    families = (given | uses.legacy_links) - uses.other_links - uses.ambiguous()
    kin = tuple(word for family in sorted(families) for word in KIN_FAMILIES[family])
    # "she"/"he" fit the legacy by their kinship family, else by the pronouns after their name.
    gender = family_gender(families) or name_gender
    return LegacyReference(names=names, display=display_name(legacy_name), kin=kin, gender=gender)
