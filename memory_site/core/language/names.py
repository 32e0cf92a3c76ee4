"""The legacy's names: how the name a family gave the legacy reads ("Uncle Bill Carter" is Bill,
called Uncle), and the short forms a family uses ("Gene" for Eugene, "Peggy" for Margaret), from
the hand-curated table of the `nicknames` package (offline: the table ships inside the package)."""

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from nicknames import NickNamer

from memory_site.core.language.words import (
    FAMILY_OF,
    FEMALE_FAMILIES,
    KIN_ANY,
    NOT_NAMES,
    alternation,
)
from memory_site.core.text import visible_text

# Short forms in the table that are also common English words, which open a sentence as
# often as a name does ("Will you…", "Art was her life", "Rich people…"): never an alias.
_WORDS = frozenset([
    "will", "wil", "bell", "art", "pate", "rich", "ant", "hob", "dob", "lib", "hap", "haps",
    "kit", "jos", "may", "hope", "joy", "dawn", "grace", "faith", "rusty", "buck", "chuck",
    "mark", "bud", "win", "dob", "nat",
])


# Courtesy titles put before a name ("Mrs. Okafor", "Dr. Ruth Adams"), with or without the dot.
_TITLES = frozenset(["mr", "mrs", "ms", "miss", "mx", "dr", "rev", "prof"])
# Before a name these are a religious title, not a relative ("Father Murphy", "Sister Mary"),
# as in the kinship rules; alone ("Mother") they are a kinship word.
_RELIGIOUS_TITLES = frozenset(["Father", "Mother", "Sister", "Brother"])
# In double quotes, brackets or single quotes (`Margaret 'Peggy' Olsen`; not the apostrophe of
# O'Neill, inside a word).
_NICKNAME = re.compile(r'["“(]([^"”)]+)["”)]|(?<![\w\'’])[\'‘]([^\'’]+?)[\'’](?![\w\'’])')


_EMPTY_BRACKETS = re.compile(r"[(\[]\s*[)\]]")
_NAME_LIKE = re.compile(r"[^\W\d_][\w'’.-]*(?:\s[^\W\d_][\w'’.-]*){0,2}")
_NOT_NICKNAMES = frozenset(["rip", "née", "nee", "born", "died", "late", "deceased", "aka"])


def _reads_as_name(text: str) -> bool:
    """A nickname in the legacy's name: one to three words of letters, the first capitalised,
    at most 32 characters, none of them a note such as "née" or "RIP"."""
    return (bool(_NAME_LIKE.fullmatch(text)) and len(text) <= 32 and text[0].isupper()
            and not any(word.lower().strip(".") in _NOT_NICKNAMES for word in text.split()))


@dataclass(frozen=True)
class LegacyName:
    """A legacy's name as the family wrote it, read (`Uncle Bill "Billy" Carter`)."""

    display: str  # the name facts are written with: "Bill"
    names: tuple[str, ...]  # the person's own names: "Bill Carter", "Bill", "Billy"
    # What else the family calls them: nicknames, the first name when the name says more,
    # the kinship word it opens with ("Billy", "Bill", "Uncle").
    aliases: tuple[str, ...]
    kin: tuple[str, ...]  # the kinship words it opens with, kinship aliases: "Uncle"
    # The nickname the family put in quotes, not a kinship word: what they call the person
    # ("Billy"), which facts are written with (offline.facts.extract_facts).
    nickname: str | None = None


def _leading_word(word: str) -> str | None:
    """"kin", "title" or "great" for a word that may open a legacy's name before the name
    itself ("Grandpa", "Dr.", "Great-Aunt"), else None."""
    plain = word.lower().removesuffix(".")
    if plain in _TITLES or word in _RELIGIOUS_TITLES:
        return "title"
    if word.lower() in FAMILY_OF:
        return "kin"
    if plain == "great" or (plain.startswith("great-") and plain.split("-")[-1] in FAMILY_OF):
        return "great"
    return None


@lru_cache(maxsize=1024)
def read_legacy_name(written: str) -> LegacyName:
    """How the name a legacy was given reads: kinship words and titles before the name are not
    part of it ("Grandpa Joe" is Joe, "Dr. Ruth Adams" is Ruth Adams, first name Ruth), and a
    kinship word there is what the family calls the person (a kinship alias: "Grandpa"; not
    after "Great": a great-grandmother is not "Grandma"). A legacy named only with kinship
    words ("Grandma", "Mom") has no name of their own and is written as called; a title before
    a single word stays ("Mrs. Okafor": a family name alone is shared with others; "Father
    Murphy", "Sister Mary": a religious title, not a relative, before a name). When the
    word after the opening ones is in lower case ("Grandma was born…") there is no name
    after them, and the text is read from its start, as a fact's subject is ("Grandma"); a
    word of a script without case ("Uncle 李") is a name."""
    # Only what reads as a name: `Rose Whitfield (1931-2020)`, `(née Smith)`, `(RIP)` or
    # `'the best'` in brackets or quotes is no nickname (found by a hostile relative: every
    # member's facts read "1931-2020 was born in Leeds").
    nicknames = [n.strip() for pair in _NICKNAME.findall(written) for n in pair
                 if _reads_as_name(n.strip())]
    words = _EMPTY_BRACKETS.sub(" ", _NICKNAME.sub(" ", written)).split()
    kinds: list[str] = []
    for word in words:
        kind = _leading_word(word)
        if kind is None:
            break
        kinds.append(kind)
    # Lower case after them ("Grandma was born…"): no name follows. A script without case
    # ("Uncle 李") is a name.
    if len(kinds) < len(words) and words[len(kinds)][:1].islower():
        kinds = []
    lead, rest = words[:len(kinds)], words[len(kinds):]
    # A nickname that is a kinship word (`Dorothy "Nana" Kimball`) is a kinship alias too.
    kin = tuple(dict.fromkeys([
        *(word.capitalize() for word, kind, before in zip(lead, kinds, ["", *kinds], strict=False)
          if kind == "kin" and before != "great"),
        *(nickname for nickname in nicknames if nickname.lower() in FAMILY_OF)]))
    if not rest:
        kin = tuple(dict.fromkeys([*kin, *(w for w in lead if w in _RELIGIOUS_TITLES)]))
        display = " ".join(words)
        display = display[:1].upper() + display[1:]
        names, first = nicknames, []
    elif kinds and kinds[-1] == "title" and len(rest) == 1:
        # As typed, and with the title's dot or without: "Mrs. Okafor", "Mrs Okafor".
        title = lead[-1].removesuffix(".")
        display = f"{lead[-1]} {rest[0]}"
        spellings = [f"{title}. {rest[0]}", f"{title} {rest[0]}"] if title.lower() in _TITLES else []
        names, first = [display, *spellings, *nicknames], []
    else:
        display = rest[0]
        names = [" ".join(rest), rest[0], *nicknames]
        first = [rest[0]] if len(words) > 1 else []
    return LegacyName(display=display,
                      names=tuple(dict.fromkeys(n for n in names if n.lower() not in FAMILY_OF)),
                      aliases=tuple(dict.fromkeys([*nicknames, *first, *kin])), kin=kin,
                      nickname=next((n for n in nicknames if n.lower() not in FAMILY_OF), None))


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


# --- The name the family calls the person by ("everyone called her Freda") -------------------

# Words a family puts before a name in what they call someone, beside the kinship words
# ("Tante Gigi", "Oom Ricky", "Tete Ru", "Ong Noi", "Lola Ising").
_NAME_PREFIXES = ("tante", "tanta", "oom", "tete", "ong", "ba", "tita", "tito", "lola", "lolo",
                  "tia", "tio", "tía", "tío", "zia", "zio", "ciocia", "baba", "dida", "babcia",
                  "dziadek", "bibi", "babu", "dadi", "nani", "amma", "appa", "ammachi", "ama",
                  "mamie", "papi", "mami", "ouma", "oupa", "paati", "thatha", "ajji", "dada",
                  "gogo", "mkhulu", "big",
                  "lil", "little", "old", "auntie", "aunty")
# Not names, though they follow "called her": "we called her every Sunday", "called him a
# saint", "called him up", "everyone called her crazy".
_NOT_CALLED = frozenset([
    "a", "an", "the", "that", "this", "every", "each", "up", "back", "home", "out", "in", "on",
    "at", "to", "about", "once", "twice", "again", "daily", "weekly", "often", "sometimes",
    "always", "never", "all", "by", "from", "for", "with", "when", "after", "before", "later",
    "yesterday", "today", "tonight", "tomorrow", "crazy", "mad", "nuts", "stubborn", "names",
    "it", "him", "her", "them", "me", "us", "you", "and", "but", "so", "because", "cause",
    "cuz", "bc", "just", "still", "too", "tho", "though", "lol", "haha", "that's", "thats",
    "one", "as", "nothing", "anything", "something", "everything", "whatever", "sir", "madam",
    "ma'am", "love", "darling", "dear", "honey", "babe", "sweetheart", "mate", "boss",
    "young", "oh", "ah", "no", "yes", "yeah", "yep", "nah", "well", "ok", "okay", "like", "um",
    "erm", "i", "we",
    # When, how often ("I called her last night", "called her Sundays", "most days").
    "last", "next", "first", "right", "most", "early", "late", "nightly",
    "sundays", "mondays", "tuesdays", "wednesdays", "thursdays", "fridays", "saturdays",
    "weekends", "nights", "mornings", "evenings", "afternoons", "several", "many",
    "some", "few", "lots", "loads", "over", "round", "around", "straight",
    # What they were called for ("everyone called her beautiful").
    "beautiful", "lovely", "pretty", "gorgeous", "sweet", "mean", "strict", "kind", "funny",
    "brave", "strong", "lucky", "wise", "clever", "smart", "silly", "wonderful", "amazing",
    "special", "difficult", "bossy", "tough", "soft", "old-fashioned", "stingy", "generous",
    "things",
])
# A word of a name, in any script ("Zoë", "José", "Élise"), whole, and not endless: the name
# is stored (Conversation.called_name).
_NICK_WORD = r"[^\W\d_][\w'’-]{0,30}(?![\w'’-])"
# The longest name read as what the family calls someone.
CALLED_MAX_CHARS = 64
_NICK_PREFIX = alternation([*FAMILY_OF, *_NAME_PREFIXES])
_NICK = rf"(?P<nick>(?:(?i:{_NICK_PREFIX})[ \t]+{_NICK_WORD}|{_NICK_WORD}))"
_EVERYONE = (r"(?:every(?:one|body)|we(?:[ \t]+all)?|all[ \t]+of[ \t]+us|the[ \t]+(?:whole[ \t]+)?"
             r"family|(?:most[ \t]+)?people|i)")
_CALLED = r"(?:always[ \t]+|just[ \t]+)?(?:called|call|calls)"
_DECLARATIONS = (
    # "everyone called her freda", "we call her Tete Ru", "i called him pa G"
    re.compile(rf"(?<![\w'’])(?i:{_EVERYONE}[ \t]+{_CALLED}[ \t]+(?:him|her))[ \t]+{_NICK}"),
    # "we all said Fonso" (a capital: "we said yes" names nobody)
    re.compile(rf"(?<![\w'’])(?i:we(?:[ \t]+all)?[ \t]+(?:said|say))[ \t]+"
               rf"(?P<nick>{_NICK_WORD})(?![ \t]+[a-z])"),
    # "dot to everyone", "mama lote to all us grandkids", "tammie tae everybody"
    re.compile(rf"(?:^|[,;:.!(]|—|–|[ \t]-)[ \t]*(?:just[ \t]+)?{_NICK}[ \t]+(?i:to|tae)[ \t]+"
               rf"(?i:every(?:one|body)|all[ \t]+(?:of[ \t]+)?us|us[ \t]+all|all[ \t]+us"
               rf"(?:[ \t]+\w+)?|us[ \t]+(?:grand)?kids|the[ \t]+(?:grand)?kids|the[ \t]+family)"
               rf"(?![\w'’])"),
    # "tante gigi we all called her", "oom ricky we say", "jojo i always called him" (not
    # "1951 i said")
    re.compile(rf"(?:^|[,;:.!(]|—|–|[ \t]-)[ \t]*{_NICK}[ \t]+(?:(?i:we|every(?:one|body))"
               rf"[ \t]+(?i:all[ \t]+|always[ \t]+)?(?i:called|call|say|said)|(?i:i)[ \t]+"
               rf"(?i:always[ \t]+)?(?i:called|call))(?:[ \t]+(?i:him|her))?(?![\w'’])"),
    # "nobody ever called him norman, it was nobby", "nobody called him cyril, he was snow"
    re.compile(rf"(?i:no(?:body|[ \t]+one)[ \t]+(?:ever[ \t]+)?called[ \t]+(?:him|her)[ \t]+"
               rf"[\w'’-]+,?[ \t]+(?:it|s?he)[ \t]+was)[ \t]+{_NICK}"),
    # "she went by Peggy", "known as Nobby", "told me to call him Stan"
    re.compile(rf"(?<![\w'’])(?i:known[ \t]+as|knew[ \t]+(?:him|her)[ \t]+as|went[ \t]+by|"
               rf"goes[ \t]+by|nicknamed|"
               rf"told[ \t]+(?:me|us)[ \t]+to[ \t]+call[ \t]+(?:him|her))[ \t]+{_NICK}"),
)
_SAYING_PRONOUN = re.compile(r"\b(him|her)\b", re.IGNORECASE)
_KIN_BEFORE = re.compile(rf"(?i:{KIN_ANY})[ \t]+$")


def _other_gender(text: str, mention: int | None, between: str, saying: str) -> bool:
    """Whether the saying's "him"/"her" cannot be the person: their gender, from the kinship
    word before their name ("my nan winifred") or a "her"/"his" said of them between, is the
    other one."""
    pronoun = _SAYING_PRONOUN.search(saying)
    if pronoun is None:
        return False
    said_female = pronoun.group(1).lower() == "her"
    genders = set()
    if mention is not None and (kin := _KIN_BEFORE.search(text, max(0, mention - 20), mention)):
        genders.add(FAMILY_OF[kin.group(0).strip().lower()] in FEMALE_FAMILIES)
    elif re.search(r"[.!?;]\s", between):
        # Only after a sentence ends: "my nan winifred. her dog, we called him Rex" (not
        # "Winifred loved his jokes, everyone called her Freda": his is someone else's).
        genders.update(word.lower() == "her"
                       for word in re.findall(r"\b(her|his)\b", between, re.I))
    return bool(genders) and said_female not in genders


# "Win or Winnie", "Dot/Dottie": another name that ends the clause (not "…Win and grandad was a
# coal miner": the next clause's subject, a review found).
_ALTERNATIVE = re.compile(
    r"[ \t]+(?:or|/)[ \t]+[^\W\d_][\w'’-]{0,30}(?![\w'’-])(?=[ \t]*(?:[,.;:!?)]|$))")
# How far from the person's name (in characters) a saying is read as about them.
_NAME_REACH = 200
# The forms of _DECLARATIONS that open with the name ("dot to everyone").
_NAME_FIRST = (2, 3)
_NAME_IN_TEXT = re.compile(r"(?<![\w'’])[A-Z][a-z'’]+")


@dataclass(frozen=True)
class DeclaredName:
    """What the family calls the person, as a message says it ("everyone called her freda"):
    the name written as a name ("Freda") and where the saying is in the message."""

    name: str
    start: int
    end: int


def _as_name(nick: str) -> str:
    return " ".join(w if any(c.isupper() for c in w) else w.capitalize() for w in nick.split())


def declared_name(text: str, names: Sequence[str]) -> DeclaredName | None:
    """The name the family calls the person by, when `text` (a user's message) says it of
    them: "my nan winifred, everyone called her freda tho", "my dad desmond, dessie to
    everyone", "tante gigi we all called her", "we all said Fonso", "nobody called him
    cyril, he was snow". The person is the one whose name (`names`, any case) the message
    says before it, with no other capitalised name in between ("his brother is Kehinde, we
    call him uncle kenny" is the brother). Not a name: a kinship word alone ("Appa we
    called him"), a title ("everyone called her Mrs P"), a common word ("we called her every
    Sunday"), or what a group calls them ("the kids called him mr t", "everyone in Othaya
    called him Mwalimu"): only everyone, we or the user."""
    own = tuple(n.strip() for n in names if n.strip())
    if not own:
        return None
    said, own_words = _said_names(own)
    # Where the message says the person's name, read once: a long message of sayings that are
    # not of the person ("everyone called her freda" 800 times about Rose) stays linear.
    mentions = [found.span() for found in said.finditer(text)]
    ends = [end for _, end in mentions]
    for index, pattern in enumerate(_DECLARATIONS):
        for match in pattern.finditer(text):
            # As a reader sees it, compatibility forms folded ("𝓡𝓸𝓼𝓲𝓮" is Rosie): no name of
            # invisible letters (a Hangul filler counts as a letter; found by a hostile relative).
            nick = unicodedata.normalize("NFKC", visible_text(match.group("nick")))
            words = nick.split()
            if not words or not nick[0].isalpha():
                continue
            first = words[0].lower().removesuffix(".")
            if len(nick) > CALLED_MAX_CHARS:
                continue
            if index == 1 and not nick[0].isupper():
                continue  # "we all said yes" names nobody
            if (index == 0 and re.match(r"(?i:i)\b", match.group(0))
                    and not any(word[0].isupper() for word in words)
                    and not re.match(r"\s*(?:[,.;:!?)]|$)", text[match.end():])):
                # "I called her last night", "i called her most days": a call, unless a name
                # (a capital, or the clause ends with it: "i called him pops.").
                continue
            if (first in _NOT_CALLED or first in _TITLES or words[-1].lower() in _NOT_CALLED
                    or (len(words) == 1 and (first in FAMILY_OF or first in _NAME_PREFIXES))):
                continue
            after = match.end("nick")
            if text[after:after + 1] == " " and said.match(text, after + 1):
                # "my sister Bridie - we call her young Bridie": a namesake told apart.
                continue
            # The saying starts at the name in the forms that open with it ("dot to
            # everyone"), after the comma before it.
            start = match.start("nick") if index in _NAME_FIRST else match.start()
            # The name said last before the saying, close to it; else right after it.
            before = bisect_right(ends, start) - 1
            if before >= 0 and start - ends[before] <= _NAME_REACH:
                between = text[ends[before]:start]
            elif (before + 1 < len(mentions)
                  and mentions[before + 1][0] - match.end() <= _NAME_REACH):
                between = ""
            else:
                continue
            if any(w not in NOT_NAMES and w.lower() not in own_words
                   and w.lower() not in FAMILY_OF
                   for w in _NAME_IN_TEXT.findall(between)):
                continue  # another person named between: "his brother is Kehinde, we call him"
            if _other_gender(text, mentions[before][0] if before >= 0 else None, between,
                             match.group(0)):
                # "my nan winifred. her dog, we called him Rex", "…grandad, we all called him
                # Smiler": the saying's "him" is not her.
                continue
            end = match.end()
            if (alternative := _ALTERNATIVE.match(text, end)) is not None:
                end = alternative.end()  # "Win or Winnie": both are the saying's
            return DeclaredName(_as_name(nick), start, end)
    return None


@lru_cache(maxsize=256)
def _said_names(names: tuple[str, ...]) -> tuple[re.Pattern[str], frozenset[str]]:
    """The person's names anywhere in a text, in any case, and their words."""
    return (re.compile(rf"(?<![\w'’])(?i:{alternation(names)})(?![\w'’])"),
            frozenset(w.lower() for n in names for w in re.findall(r"[\w'’]+", n)))
