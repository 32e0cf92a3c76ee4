"""The offline provider's summaries: the user's most informative sentences within a token limit;
the rolling summary also keeps what the agent last asked or offered, marked as the agent's."""

import re
from collections.abc import Sequence

from memory_site.core.ai.base import TranscriptLine
from memory_site.core.ai.tokens import count_tokens
from memory_site.core.language.sentences import is_question, split_sentences
from memory_site.core.language.words import NOT_NAMES

DEFAULT_SUMMARY_TOKEN_LIMIT = 200

# --- sentence features ---------------------------------------------------------------------
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


def sentence_score(sentence: str, legacy_terms: Sequence[str] = ()) -> int:
    """Higher for sentences that carry names, dates, places and first-person statements."""
    if _FILLER.match(sentence):
        return -5
    score = 0
    if _DATE.search(sentence):
        score += 3
    if _PLACE.search(sentence):
        score += 2
    names = [w for w in _CAPITALIZED.findall(sentence) if w not in NOT_NAMES]
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

# What the agent asked or offered (seed 003's proactive suggestion): the user's next "yes" or
# "no" answers it, so the summary keeps it, marked as the agent's, above any user sentence.
AGENT_ASKED = "The agent asked: "
AGENT_OFFERED = "The agent offered: "
AGENT_LINES_KEPT = 2
_AGENT_SCORE = 10
_OFFER = re.compile(
    r"\b(?:(?:would|do) you (?:like|want) me to|shall I|should I|may I|can I|I could|I can|"
    r"want me to)\b|\b(?:remember|note|save|keep|forget|update|add)\b.*\?$",
    re.IGNORECASE,
)


def _agent_line(sentence: str) -> str | None:
    """The agent's sentence as a summary line: a proposal or a question, else nothing."""
    if _OFFER.search(sentence) and (is_question(sentence) or "I can" in sentence
                                    or "I could" in sentence):
        return AGENT_OFFERED + sentence
    if is_question(sentence):
        return AGENT_ASKED + sentence
    return None


def _agent_candidates(lines: Sequence[TranscriptLine]) -> list[tuple[int, int, str]]:
    """The agent's last AGENT_LINES_KEPT questions or offers in `lines`."""
    found = [
        (_AGENT_SCORE, line.sequence, marked)
        for line in lines if line.role == "assistant"
        for sentence in split_sentences(line.content)
        if (marked := _agent_line(sentence))
    ]
    return found[-AGENT_LINES_KEPT:]


def _rescore(sentence: str, legacy_terms: Sequence[str]) -> int:
    if sentence.startswith((AGENT_ASKED, AGENT_OFFERED)):
        return _AGENT_SCORE
    return sentence_score(sentence, legacy_terms)


def rolling_summary(*, previous_summary: str | None, messages: Sequence[TranscriptLine],
                    window_start: int, token_limit: int, legacy_terms: Sequence[str] = ()) -> str:
    """Seed 002's incremental summary, offline: one `[sequence] sentence` line per kept
    sentence, so that what falls before `window_start` can be dropped exactly. The agent's
    latest questions and proposals (at most AGENT_LINES_KEPT) are kept first, each marked
    "The agent asked: " or "The agent offered: "."""
    kept: list[tuple[int, int, str]] = []
    for line in (previous_summary or "").splitlines():
        match = _SUMMARY_LINE.match(line.strip())
        if match and int(match.group(1)) >= window_start:
            sentence = match.group(2)
            kept.append((_rescore(sentence, legacy_terms), int(match.group(1)), sentence))
    new = [m for m in messages if m.sequence >= window_start]
    agent = _agent_candidates(new)
    if agent:
        # Only the agent's latest questions and offers matter: older ones were answered.
        kept = [c for c in kept if c[0] != _AGENT_SCORE]
    candidates = kept + _user_candidates(new, legacy_terms) + agent
    chosen = _choose(candidates, token_limit, newest_first=True)
    if not chosen:
        last = max((m.sequence for m in messages), default=window_start)
        return f"[{last}] No details about the person have been shared yet."
    return "\n".join(f"[{sequence}] {sentence}" for sequence, sentence in chosen)
