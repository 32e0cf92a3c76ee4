"""Embedding providers: an offline deterministic hashing embedder and any OpenAI-compatible endpoint."""

import hashlib
import logging
import math
import re
import time

from memory_site.core.ai.base import EmbeddingError

logger = logging.getLogger(__name__)

# However large the configured backoff, one wait never exceeds this.
MAX_BACKOFF_SECONDS = 30.0
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
        # Only the few slots a text's features hash to are touched: the norm is summed over
        # them in index order and only they are divided, which gives the same floats as doing
        # both over the whole vector (adding or dividing a 0.0 changes nothing) in a fraction
        # of the time (a message of 20 words touches about 40 of 1024 slots).
        counts: dict[str, int] = {}
        for feature in _features(text):
            counts[feature] = counts.get(feature, 0) + 1
        slots: dict[int, float] = {}
        for feature, count in counts.items():
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dimensions
            sign = 1.0 if digest[4] & 1 else -1.0
            weight = (1.0 + math.log(count)) * (0.7 if " " in feature else 1.0)
            slots[index] = slots.get(index, 0.0) + sign * weight
        vector = [0.0] * self.dimensions
        norm = math.sqrt(sum(slots[i] * slots[i] for i in sorted(slots)))
        if norm == 0.0:
            # Cosine distance is undefined for a zero vector; give empty text a fixed direction.
            vector[0] = 1.0
            return vector
        for index, value in slots.items():
            vector[index] = value / norm
        return vector

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [self._embed_one(text) for text in texts]


class OpenAIEmbedder:
    """Any OpenAI-compatible /embeddings endpoint, with retries of our own (not the client's,
    whose backoff grows past any budget): at most EMBEDDING_MAX_RETRIES + 1 attempts of at
    most EMBEDDING_TIMEOUT_SECONDS each, with a doubling backoff between them."""

    name = "openai"

    def __init__(self, *, base_url: str, api_key: str, model: str, dimensions: int,
                 timeout: float, max_retries: int, backoff: float = 0.5):
        import openai

        self.dimensions = dimensions
        self.model = model
        self.max_retries = max_retries
        self.backoff = backoff
        self._client = openai.OpenAI(
            base_url=base_url or None,
            api_key=api_key or "not-set",
            timeout=timeout,
            max_retries=0,
        )

    def _request(self, texts: list[str]):
        import openai

        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return self._client.embeddings.create(
                    model=self.model, input=texts, dimensions=self.dimensions
                )
            except (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError,
                    openai.InternalServerError) as exc:
                if attempt == attempts:
                    raise EmbeddingError(
                        f"embedding request failed after {attempts} attempts: {exc}"
                    ) from exc
                delay = min(self.backoff * (2 ** (attempt - 1)), MAX_BACKOFF_SECONDS)
                logger.warning("Embedding request failed (%s); retry %d in %.2fs", exc,
                               attempt, delay)
                time.sleep(delay)
            except openai.OpenAIError as exc:
                raise EmbeddingError(f"embedding request failed: {exc}") from exc
        raise EmbeddingError("unreachable")

    def embed(self, texts: list[str]) -> list[list[float]]:
        response = self._request(texts)
        vectors = [item.embedding for item in sorted(response.data, key=lambda d: d.index)]
        if len(vectors) != len(texts) or any(len(v) != self.dimensions for v in vectors):
            raise EmbeddingError(
                f"embedding endpoint returned {len(vectors)} vectors of the wrong size "
                f"(expected {len(texts)} × {self.dimensions})"
            )
        return vectors
