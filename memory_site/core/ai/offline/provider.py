"""The offline, deterministic LLM provider: adapts the summarizer, fact extraction and chat rules.

Seed 004 asks for a v1 with no LLM dependency; this is what runs by default
(`LLM_PROVIDER=extractive`). The rules, and how well they do on the labelled set in
tests/data/, are in docs/quality.md.
"""

from collections.abc import Sequence
from typing import Any

from memory_site.core.ai.base import ChatReply, KnownFact, SummaryExtraction, TranscriptLine
from memory_site.core.ai.offline.chat import offline_chat_reply
from memory_site.core.ai.offline.facts import extract_facts
from memory_site.core.ai.offline.summarizer import (
    DEFAULT_SUMMARY_TOKEN_LIMIT,
    extractive_summary,
    rolling_summary,
)
from memory_site.core.language.sentences import display_name


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
        self,
        *,
        messages: list[TranscriptLine],
        legacy_name: str,
        aliases: Sequence[str] = (),
        known_facts: Sequence[KnownFact] = (),
        called: str | None = None,
    ) -> SummaryExtraction:
        terms = [display_name(legacy_name), *aliases]
        summary = extractive_summary(messages, self._token_limit(), terms)
        return SummaryExtraction(
            summary=summary or "The family talked without sharing details.",
            facts=extract_facts(messages, legacy_name, aliases, known_facts, called=called),
        )

    def chat(self, *, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        return offline_chat_reply(messages=messages, tools=tools)
