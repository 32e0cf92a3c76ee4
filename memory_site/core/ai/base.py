"""The provider interfaces and the value types that cross them."""

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from memory_site.core.text import has_lone_surrogate

FACT_CATEGORIES = (
    "personality",
    "hobby",
    "relationship",
    "milestone",
    "occupation",
    "preference",
    "habit",
    "other",
)


class LLMError(Exception):
    """The LLM provider failed: network error, timeout, HTTP error after retries."""


class LLMOutputError(LLMError):
    """The LLM answered, but not with what the schema asks for."""


class EmbeddingError(Exception):
    """The embedding provider failed."""


@dataclass(frozen=True)
class TranscriptLine:
    """One stored message as the providers see it."""

    sequence: int
    role: str
    content: str


@dataclass(frozen=True)
class KnownFact:
    """A current fact of the user's about the legacy, sent with a batch so that the provider can
    say which one a statement corrects. `ref` is a short reference local to one call ("f1"),
    never a database id."""

    ref: str
    content: str


@dataclass(frozen=True)
class ExtractedFact:
    category: str
    content: str
    # The `ref` of the known fact this statement corrects (seed 003's "update over
    # contradict"); None for a new fact.
    supersedes: str | None = None


@dataclass(frozen=True)
class SummaryExtraction:
    """Seed 000's `{"summary": …, "facts": [{"category": …, "content": …}]}`, validated."""

    summary: str
    facts: list[ExtractedFact] = field(default_factory=list)


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as OpenAI function calling sends it


def tool_arguments(arguments: object) -> dict | None:
    """A tool call's arguments as an object (sent as one, or as OpenAI's JSON text), or None
    when they are not one: not JSON, nested deeper than the decoder follows, or holding half of
    a surrogate pair (memory_site.core.parsers)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            return None
        if has_lone_surrogate(arguments):
            return None
    return arguments if isinstance(arguments, dict) else None


@dataclass(frozen=True)
class ChatReply:
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)


class LLMProvider(Protocol):
    name: str

    def summarize_window(
        self,
        *,
        previous_summary: str | None,
        messages: list[TranscriptLine],
        window_start: int,
        legacy_name: str,
    ) -> str:
        """Seed 002: fold new messages into the previous rolling summary, dropping what
        came before `window_start`."""

    def summarize_and_extract(
        self,
        *,
        messages: list[TranscriptLine],
        legacy_name: str,
        aliases: Sequence[str] = (),
        known_facts: Sequence[KnownFact] = (),
        called: str | None = None,
    ) -> SummaryExtraction:
        """Seed 000: one call that summarises a batch and extracts facts about the legacy,
        who may also be called by any of `aliases` (first name, nickname). `known_facts` are
        the user's current facts about the legacy; a returned fact whose `supersedes` names one
        of their refs replaces it. `called`: the name the family said they call the person by
        ("everyone called her Freda"), which the facts are written with."""

    def chat(self, *, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        """One chat completion with function calling; `messages` are OpenAI chat messages."""


class EmbeddingProvider(Protocol):
    name: str
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector of `dimensions` floats per text."""


def clean_model_text(text: str) -> str:
    """Model output as storable text: PostgreSQL text cannot hold NUL characters."""
    return text.replace("\x00", "").strip()


def parse_summary_extraction(data: Any, known_refs: Collection[str] = ()) -> SummaryExtraction:
    """Validate seed 000's JSON shape; anything else raises LLMOutputError. A fact's optional
    `"supersedes"` is null or one of `known_refs` (the refs of the known facts sent with the
    batch): any other value (an unknown ref, a number, an id the model made up) is malformed
    output, so nothing of the batch is stored and the job retries."""
    if not isinstance(data, dict):
        raise LLMOutputError("expected a JSON object with 'summary' and 'facts'")
    summary = data.get("summary")
    facts = data.get("facts")
    if not isinstance(summary, str) or not summary.strip():
        raise LLMOutputError("'summary' must be a non-empty string")
    if not isinstance(facts, list):
        raise LLMOutputError("'facts' must be a list")
    parsed: list[ExtractedFact] = []
    for index, fact in enumerate(facts):
        if not isinstance(fact, dict):
            raise LLMOutputError(f"facts[{index}] must be an object")
        category = fact.get("category")
        content = fact.get("content")
        if category not in FACT_CATEGORIES:
            raise LLMOutputError(f"facts[{index}].category must be one of {FACT_CATEGORIES}")
        if not isinstance(content, str) or not content.strip():
            raise LLMOutputError(f"facts[{index}].content must be a non-empty string")
        supersedes = fact.get("supersedes")
        if supersedes is not None and (
            not isinstance(supersedes, str) or supersedes not in known_refs
        ):
            raise LLMOutputError(
                f"facts[{index}].supersedes must be null or the ref of a known fact"
            )
        if clean_model_text(content):
            parsed.append(ExtractedFact(category=category, content=clean_model_text(content),
                                        supersedes=supersedes))
    if not clean_model_text(summary):
        raise LLMOutputError("'summary' must be a non-empty string")
    return SummaryExtraction(summary=clean_model_text(summary), facts=parsed)
