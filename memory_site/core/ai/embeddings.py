"""Embedding providers: an offline deterministic hashing embedder and any OpenAI-compatible endpoint."""

import hashlib
import math
import re

from memory_site.core.ai.base import EmbeddingError

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "had", "has", "have", "he", "her", "his", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "she", "so", "that", "the", "their", "them", "they", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "will", "with", "you", "your"]
)


def _stem(word: str) -> str:
    for suffix in ("'s", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _features(text: str) -> list[str]:
    words = [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]
    bigrams = [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
    return words + bigrams


class HashingEmbedder:
    """Feature hashing of stemmed words and word pairs into a unit vector.

    Deterministic and offline: texts that share words land close together, which is
    what retrieval needs when no embedding model is configured.
    """

    name = "hashing"

    def __init__(self, dimensions: int):
        self.dimensions = dimensions

    def _embed_one(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        counts: dict[str, int] = {}
        for feature in _features(text):
            counts[feature] = counts.get(feature, 0) + 1
        for feature, count in counts.items():
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dimensions
            sign = 1.0 if digest[4] & 1 else -1.0
            weight = (1.0 + math.log(count)) * (0.7 if " " in feature else 1.0)
            vector[index] += sign * weight
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0.0:
            # Cosine distance is undefined for a zero vector; give empty text a fixed direction.
            vector[0] = 1.0
            return vector
        return [v / norm for v in vector]

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self._embed_one(text) for text in texts]


class OpenAIEmbedder:
    """Any OpenAI-compatible /embeddings endpoint."""

    name = "openai"

    def __init__(self, *, base_url: str, api_key: str, model: str, dimensions: int,
                 timeout: float, max_retries: int):
        import openai

        self.dimensions = dimensions
        self.model = model
        self._client = openai.OpenAI(
            base_url=base_url or None,
            api_key=api_key or "not-set",
            timeout=timeout,
            max_retries=max_retries,
        )

    def embed(self, texts: list[str]) -> list[list[float]]:
        import openai

        try:
            response = self._client.embeddings.create(
                model=self.model, input=texts, dimensions=self.dimensions
            )
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"embedding request failed: {exc}") from exc
        vectors = [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
        if len(vectors) != len(texts) or any(len(v) != self.dimensions for v in vectors):
            raise EmbeddingError(
                f"embedding endpoint returned {len(vectors)} vectors of the wrong size "
                f"(expected {len(texts)} × {self.dimensions})"
            )
        return vectors
