"""The rules for user-written text: PostgreSQL text cannot hold NUL, and stored text reaches a
model only as fenced data (fence_line)."""

import re
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
                        "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f"
                        "\ufeff\uffa0\U000e0000-\U000e0fff]")


def escape_tags(text: str) -> str:
    """`text` with the `<` of every tag-shaped token written as `&lt;`: it can neither open nor
    close a fence of any prompt. Everything else is left as it was."""
    return _TAG_START.sub(rf"{ESCAPED_LESS_THAN}\1", text)


def fence_line(text: str | None) -> str:
    """The one rule for stored text that reaches a model: invisible characters dropped (so none
    can hide a tag), folded onto one line (so that it cannot start a heading, an entry or a
    transcript line of its own) and with every tag escaped (escape_tags), so that it stays
    inside the fence it is put in."""
    return escape_tags(" ".join(_INVISIBLE.sub("", text or "").split()))


def fence_block(tag: str, lines: Iterable[str]) -> str:
    """`<tag>`, the lines (each already passed through fence_line), `</tag>`, one per line."""
    return "\n".join([f"<{tag}>", *lines, f"</{tag}>"])
