"""The offline, deterministic LLM provider: extractive summaries and rule-based fact extraction.

Seed 004 asks for a v1 with no LLM dependency; this is what runs by default.
"""

import re
from typing import Any

from memory_site.ai.base import ChatReply, ExtractedFact, SummaryExtraction, TranscriptLine
from memory_site.ai.tokens import count_tokens

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
SUMMARY_TOKEN_LIMIT = 200


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def _sentence_score(sentence: str) -> int:
    score = 0
    if re.search(r"\b(1[89]\d\d|20\d\d)\b", sentence):
        score += 2
    if re.search(r"\b[A-Z][a-z]+", sentence[1:]):
        score += 2
    if re.search(r"\b(I|my|we|our)\b", sentence):
        score += 1
    if sentence.endswith("?"):
        score -= 1
    return score


def extractive_summary(lines: list[TranscriptLine], token_limit: int = SUMMARY_TOKEN_LIMIT) -> str:
    """Keep the highest-scoring user sentences, in conversation order, within a token limit."""
    candidates: list[tuple[int, int, str]] = []
    for position, line in enumerate(lines):
        if line.role != "user":
            continue
        for sentence in split_sentences(line.content):
            candidates.append((_sentence_score(sentence), position, sentence))
    ranked = sorted(candidates, key=lambda c: (-c[0], c[1]))
    chosen: list[tuple[int, str]] = []
    used = 0
    for _, position, sentence in ranked:
        cost = count_tokens(sentence) + 1
        if used + cost > token_limit:
            continue
        chosen.append((position, sentence))
        used += cost
    chosen.sort()
    return " ".join(sentence for _, sentence in chosen)


def extract_facts(lines: list[TranscriptLine], legacy_name: str) -> list[ExtractedFact]:
    """Statements the user made that mention the legacy person by name."""
    first_name = legacy_name.split()[0] if legacy_name.split() else legacy_name
    facts: list[ExtractedFact] = []
    for line in lines:
        if line.role != "user":
            continue
        for sentence in split_sentences(line.content):
            if sentence.endswith("?") or first_name.lower() not in sentence.lower():
                continue
            facts.append(ExtractedFact(category="other", content=sentence.rstrip(".") + "."))
    return facts


class ExtractiveLLM:
    name = "extractive"

    def summarize_window(
        self,
        *,
        previous_summary: str | None,
        messages: list[TranscriptLine],
        window_start: int,
        legacy_name: str,
    ) -> str:
        in_window = [m for m in messages if m.sequence >= window_start]
        return extractive_summary(in_window) or (previous_summary or "")

    def summarize_and_extract(
        self, *, messages: list[TranscriptLine], legacy_name: str
    ) -> SummaryExtraction:
        summary = extractive_summary(messages) or "The family talked without sharing details."
        return SummaryExtraction(summary=summary, facts=extract_facts(messages, legacy_name))

    def chat(self, *, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
        said = (last_user or {}).get("content") or ""
        return ChatReply(
            content="I'm running without a language model, so my answers are simple, "
            f"but I have kept what you said: \"{said[:200]}\""
        )
