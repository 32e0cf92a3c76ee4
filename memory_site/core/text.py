"""The rules for user-written text: PostgreSQL text cannot hold NUL, stored text reaches a
model only as fenced data (fence_line), names are compared in one form (comparison_key), and
quotations are found by a rule the quoted text cannot subvert (outside_quotations)."""

import re
import unicodedata
from collections.abc import Iterable

from django.core.exceptions import ValidationError

# DRF's CharField says the same, so an API answers alike whether its serializer or a
# service finds the character.
NUL_MESSAGE = "Null characters are not allowed."


def has_nul(value: object) -> bool:
    return isinstance(value, str) and "\x00" in value


def nul_errors(**fields: object) -> dict[str, list[str]]:
    """`{field: [NUL_MESSAGE]}` for each given text that contains a NUL character."""
    return {name: [NUL_MESSAGE] for name, value in fields.items() if has_nul(value)}


def reject_nul(**fields: object) -> None:
    """Raise a ValidationError naming each given text that contains a NUL character, before
    PostgreSQL would fail on it (a DataError, an answer 500)."""
    if errors := nul_errors(**fields):
        raise ValidationError(errors)


# A JSON string may spell half of a UTF-16 surrogate pair alone ("\ud800"); Python's decoder
# keeps it as a character that no UTF-8 text (nor PostgreSQL) can hold, nor any response echo.
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
LONE_SURROGATE_MESSAGE = (
    "JSON parse error - a string holds half of a UTF-16 surrogate pair (\\ud800-\\udfff) "
    "alone, which is not text."
)


def has_lone_surrogate(value: object) -> bool:
    """Whether a decoded JSON value holds a lone surrogate in any string, key or value, at any
    depth (the depth a decoder followed: iterative, no recursion limit to hit)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if not item.isascii() and _LONE_SURROGATE.search(item):  # isascii: no scan
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


# --- Fences: stored text as data inside a prompt ------------------------------------------------

# The `<` of anything shaped like an opening or closing tag (`<name`, `</name`, `< / name`,
# `<!--`), also with the look-alikes a model may read as `<` (full-width, small form, single
# and mathematical angle brackets, modifier and Canadian syllabics forms). Every tag, not only
# the fences of one prompt: a name or a message reaches several prompts with different fences.
# A tag name may be written in full-width letters, so any letter counts.
_LESS_THAN = "<\uff1c\ufe64\u2039\u2329\u27e8\u3008\u02c2\u1438\u276e\u29fc"
_TAG_START = re.compile(rf"[{_LESS_THAN}](\s*/?\s*(?:[^\W\d_]|!))")
ESCAPED_LESS_THAN = "&lt;"
# Characters that show nothing but can sit between `<` and a tag name: format characters
# (zero-width spaces and joiners, word joiner, BOM, soft hyphen, bidi controls) and the
# invisible combining/filler marks. They are dropped from fenced text.
_INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
                        "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u2800\u3164\ufe00-\ufe0f"
                        "\ufeff\uffa0\U000e0000-\U000e0fff]")


def without_invisible(text: str) -> str:
    """`text` with the invisible characters dropped (the ones fence_line drops)."""
    return _INVISIBLE.sub("", text)


def escape_tags(text: str) -> str:
    """`text` with the `<` of every tag-shaped token written as `&lt;`: it can neither open nor
    close a fence of any prompt. Everything else is left as it was."""
    return _TAG_START.sub(rf"{ESCAPED_LESS_THAN}\1", text)


def fence_line(text: str | None) -> str:
    """The one rule for stored text that reaches a model: invisible characters dropped (so none
    can hide a tag), folded onto one line (so that it cannot start a heading, an entry or a
    transcript line of its own) and with every tag escaped (escape_tags), so that it stays
    inside the fence it is put in."""
    return escape_tags(" ".join(without_invisible(text or "").split()))


def fence_block(tag: str, lines: Iterable[str]) -> str:
    """`<tag>`, the lines (each already passed through fence_line), `</tag>`, one per line."""
    return "\n".join([f"<{tag}>", *lines, f"</{tag}>"])


# --- Names compared ------------------------------------------------------------------------------


INVISIBLE_MESSAGE = "Must hold characters a reader can see, not only invisible ones."


def visible_text(text: str | None) -> str:
    """`text` as a reader sees it: invisible and other format characters (zero-width space,
    joiner, direction marks, …) dropped, composed (NFC) and whitespace folded. How a name is
    stored, so that none holds what no one can see."""
    text = "".join(
        char for char in without_invisible(text or "") if unicodedata.category(char) != "Cf"
    )
    return " ".join(unicodedata.normalize("NFC", text).split())


def comparison_key(text: str | None) -> str:
    """The form in which two names are the same name: the visible text (visible_text) with
    compatibility forms folded (NFKC: a full-width "Ｒｏｓｅ" is "Rose") and case folded, so that
    no name differs from another by what a reader cannot see."""
    folded = unicodedata.normalize("NFKC", visible_text(text)).casefold()
    folded = unicodedata.normalize("NFKC", folded)
    return " ".join(folded.split())


# --- Quotations: text quoted in a reply ----------------------------------------------------------

# Every quotation mark, of any script and style: straight and full-width double quotes, “ ” „ ‟
# ⹂, « » ‹ › ‚ ‛, the corner brackets 「 」 『 』 (and their vertical and half-width forms ｢ ｣),
# 〝 〞 〟, the double primes ″ ‶ and ditto mark 〃 used as quotes, and the ornament marks; and
# the single quotes that double as apostrophes (' ＇ ‘ ’), see _marks.
_QUOTATION_MARKS = (
    "\"\uff02\u201c\u201d\u201e\u201f\u2e42\u00ab\u00bb\u2039\u203a\u201a\u201b"
    "\u300c-\u300f\ufe41-\ufe44\u301d-\u301f\u275b-\u275e\u276e\u276f\U0001f676-\U0001f678"
    "\uff62\uff63\u2033\u2036\u3003"
)
_APOSTROPHES = "'\uff07\u2018\u2019"
_MARK = re.compile(f"[{_QUOTATION_MARKS}{_APOSTROPHES}]")


# What a single quote before a word leaves out, where no quotation opens: a decade ('60s, ’90s;
# not any two digits: "'12 Elm Street was home …'" is a quotation), rock 'n' roll and the
# common elisions in lower case ('til, 'cause, 'em, 'tis, 'bout). A quotation rarely opens
# with one of them: most open with a capital letter.
_ELISION = re.compile(
    rf"(?:\d0s(?![^\W_])|n[{_APOSTROPHES}]|(?:til|cause|cos|em|tis|twas|bout|round)(?![^\W_]))"
)


def _apostrophe(text: str, at: int) -> bool:
    """The single quote at `at` stands between two letters or digits ("don't", "Joe’s")."""
    return text[at - 1:at].isalnum() and text[at + 1:at + 2].isalnum()


def _shortens(text: str, at: int) -> bool:
    """The single quote at `at` could start a word it shortens ("the '60s", "'til", "'n'")."""
    return not text[at - 1:at].isalnum() and _ELISION.match(text, at + 1) is not None


def _elides(text: str, at: int) -> bool:
    """The single quote at `at` starts a word it shortens, and no later single quote could
    close a quotation it would open: then "'round here, shall I forget …?'" is a quotation
    (the failure falls on the safe side: "the '60s … 'Moon River'" reads as one quotation)."""
    if not _shortens(text, at):
        return False
    for later in re.finditer(f"[{_APOSTROPHES}]", text[at + 1:]):
        where = at + 1 + later.start()
        if _apostrophe(text, where) or _shortens(text, where):
            continue  # in a word ("don't"), or shortening one ("'til")
        if text[where - 1:where] == "n" and text[where - 2:where - 1] in _APOSTROPHES:
            continue  # the end of 'n'
        return False
    return True


def _marks(text: str) -> list[int]:
    """Where the quotation marks of `text` stand. A single quote between two letters or digits
    is an apostrophe, and so is one that shortens the word it starts (_ELISION); one after a
    letter ("the kids' names", rock 'n' roll) closes a quotation only when a single quote that
    can open one (not after a letter) came before."""
    found: list[int] = []
    single_opened = False
    for match in _MARK.finditer(text):
        at = match.start()
        if text[at] in _APOSTROPHES:
            if _elides(text, at):
                continue
            after_letter = text[at - 1:at].isalnum()
            if after_letter and (not single_opened or _apostrophe(text, at)):
                continue
            single_opened = single_opened or not after_letter
        found.append(at)
    return found


def quotable(text: str) -> str:
    """`text` fit to be put between quotation marks: every quotation mark in it written as a
    straight apostrophe (an apostrophe inside a word is left as it is), so that a quotation
    around it with any other mark ends at its own closing mark, not at one the text brought."""
    return _MARK.sub(
        lambda match: match[0] if _apostrophe(text, match.start()) else "'", text
    )


def outside_quotations(text: str) -> str:
    """`text` without everything from its first quotation mark to its last: whatever `text`
    quotes, with whichever marks, is gone, and what is quoted cannot end its quotation early,
    since any mark it holds falls inside that span too. The cost: the words between two
    quotations go with them."""
    marks = _marks(text)
    return f"{text[:marks[0]]} {text[marks[-1] + 1:]}" if marks else text
