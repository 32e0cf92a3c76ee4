"""Sentences: splitting text into them, telling a question, and the name a fact is written with."""

import re

from memory_site.core.language.names import read_legacy_name

# A sentence ends at ".", "!" or "?" before a capital or a digit, or, as families type, before
# a lower-case word when the mark follows a word of two letters or more ("…Buick. she drove
# us…"; not "…" nor "a.m. she…").
_SENTENCE = re.compile(
    r"(?<=[.!?])\s+(?=[\"'“(]?[A-Z0-9])|(?<=[A-Za-z0-9]{2}[.!?])\s+(?=[a-z])|\n+")
_ABBREVIATION = re.compile(
    r"\b(Mr|Mrs|Ms|Dr|St|Jr|Sr|Mt|Rev|Fr|approx|vs)\.$",
    re.IGNORECASE)
_QUESTION_START = re.compile(
    r"^(who|what|when|where|why|how|which|do|does|did|can|could|would|will|is|are|was|were|"
    r"should|have|has)\b",
    re.IGNORECASE,
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
    """The name facts are written with: the first name, without a quoted nickname, a kinship
    word or a title before it ("Grandpa Joe" → "Joe"; "Grandma" stays "Grandma"; see
    names.read_legacy_name)."""
    return read_legacy_name(legacy_name).display or legacy_name.strip()
