"""Word tables and regular-expression helpers shared by the language rules."""

import re
from collections.abc import Sequence

# Capitalised words that start sentences or stand for someone, not names.
NOT_NAMES = frozenset(
    ["I", "I'm", "I've", "I'd", "I'll", "The", "A", "An", "And", "But", "So", "Then", "When", "Where", "What", "Who", "Why", "How", "Yes", "No", "Oh", "Well", "She", "He", "Her", "His", "They", "Their", "We", "Our", "My", "It", "Its", "This", "That", "There", "Every", "Once", "Actually", "Sorry", "Maybe", "Perhaps", "Always", "Never", "Hi", "Hello", "Thanks", "Thank"]
)


# Kinship words by family. Which family (if any) means the legacy is decided per conversation
# (see kinship_aliases); a family that does stands for them in every form ("my mom, Rose"
# makes "Mother" and "Mama" Rose too).
KIN_FAMILIES: dict[str, tuple[str, ...]] = {
    # Round 5: regional and family forms ("mam", "nain", "oma", "nonno", "ouma", "granda").
    "mother": ("mom", "mother", "mum", "mommy", "mummy", "mama", "mamma", "momma", "ma", "mam",
               "mammy"),
    "father": ("dad", "father", "daddy", "papa", "pa", "pop", "pops"),
    # Round 6: more families' words ("my lola remy", "my güela", "my babcia"). Not the ones a
    # family calls the person by as a name ("Gogo ran the spaza shop", "Thatha", "Pawpaw"):
    # read as kinship words, they lost more than they found on the labelled sets.
    "grandmother": ("grandma", "grandmother", "granny", "gran", "nana", "nanna", "nan",
                    "grandmom", "grandmama", "nain", "oma", "nonna", "abuela", "ouma", "bubbe",
                    "lola", "abuelita", "güela", "guela", "babcia", "bubbie"),
    "grandfather": ("grandpa", "grandfather", "granddad", "grandad", "gramps", "grandpop",
                    "grandpapa", "taid", "opa", "nonno", "abuelo", "oupa", "zayde", "granda",
                    "lolo", "abuelito", "dziadek", "zaidy", "zeyde", "granddaddy", "grandaddy"),
    "aunt": ("aunt", "auntie", "aunty"),
    "uncle": ("uncle",),
    "sister": ("sister", "sis"),
    "brother": ("brother",),
    "wife": ("wife",),
    "husband": ("husband",),
    "daughter": ("daughter",),
    "son": ("son",),
    "cousin": ("cousin",),
    # Round 4: step- and half-relatives are families of their own ("my stepbrother cal" is
    # not "my brother", and "my mum married his dad" is not about Cal).
    "stepmother": ("stepmom", "stepmum", "stepmother", "step-mom", "step-mum", "step-mother"),
    "stepfather": ("stepdad", "stepfather", "step-dad", "step-father"),
    "stepsister": ("stepsister", "step-sister", "half-sister"),
    "stepbrother": ("stepbrother", "step-brother", "half-brother"),
}
FEMALE_FAMILIES = frozenset(["mother", "grandmother", "aunt", "sister", "wife", "daughter",
                             "stepmother", "stepsister"])
MALE_FAMILIES = frozenset(["father", "grandfather", "uncle", "brother", "husband", "son",
                           "stepfather", "stepbrother"])
# Without a link to the legacy's name, only a parent or grandparent may be the person being
# remembered: a sibling, child, spouse, aunt, uncle or cousin the user mentions is far more
# often someone else in the story ("My husband and I visited her every Sunday").
UNLINKED_FAMILIES = ("mother", "father", "grandmother", "grandfather")
FAMILY_OF = {word: family for family, words in KIN_FAMILIES.items() for word in words}
# Bare and lower-case, these still name the user's own relative ("when mom retired"); other
# kinship words need "my"/"our" or a capital ("my mother", "Mother"), not "a mother of three".
NAME_LIKE_KIN = frozenset(["mom", "dad", "mum", "mommy", "mummy", "daddy", "mama", "momma",
                            "mam", "mammy", "papa", "grandma", "grandpa", "granny", "nana", "nanna", "grandad",
                            "granddad", "gramps", "grandmom"])
KIN_TITLES = ("Mrs.", "Mrs", "Mr.", "Mr", "Ms.", "Ms", "Dr.", "Dr",
              *(word.capitalize() for word in FAMILY_OF))
OTHER_PEOPLE = (*FAMILY_OF, "friend", "neighbor", "neighbour", "boss", "kid", "children",
                "niece", "nephew", "grandson", "granddaughter", "parent", "grandparent")


def alternation(words: Sequence[str]) -> str:
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


def ends_at(pattern: re.Pattern[str], text: str, position: int) -> bool:
    """Whether `pattern` (anchored with "$") matches text that ends at `position`."""
    return bool(pattern.search(text, max(0, position - _LOOKBACK), position))


KIN_ANY = alternation(list(FAMILY_OF))
# "Ma'am", "pop music" and "Mother's Day" are not relatives.
NOT_KIN_AFTER = r"(?!['’]am\b)(?!\s+(?:music|art|songs?|stars?|culture|quiz|corn)\b)(?!['’]s\s+Day\b)"


# A yes, however it opens ("oh yes", "mm-hmm", "yes please"): what the offline agent reads as
# a yes to its offer is what the write rule (agent_memory.write_rule) takes as one.
AFFIRMATIVE = (
    r"(?:(?:oh|ah|mm|um)[,\s]+)?(?:yes|yeah|yep|yup|yas|sure|ok|okay|please do|please|go ahead"
    r"|do it|do that|absolutely|of course|definitely|certainly|that's right|right|correct|mhm"
    r"|mm-hmm|uh-huh)\b"
)