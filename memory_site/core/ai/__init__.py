"""AI clients shared by every app: the LLM, embeddings and token counting, chosen by settings."""

from memory_site.core.ai.base import (
    ChatReply,
    EmbeddingError,
    ExtractedFact,
    KnownFact,
    LLMError,
    LLMOutputError,
    SummaryExtraction,
    ToolCall,
    TranscriptLine,
)
from memory_site.core.ai.providers import get_embedder, get_llm
from memory_site.core.ai.tokens import count_tokens, truncate_to_tokens

__all__ = [
    "ChatReply",
    "EmbeddingError",
    "ExtractedFact",
    "KnownFact",
    "LLMError",
    "LLMOutputError",
    "SummaryExtraction",
    "ToolCall",
    "TranscriptLine",
    "count_tokens",
    "get_embedder",
    "get_llm",
    "truncate_to_tokens",
]
