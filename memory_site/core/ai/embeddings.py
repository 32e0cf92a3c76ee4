"""Embedding providers: an offline deterministic hashing embedder and any OpenAI-compatible endpoint."""

import hashlib
import logging
import math
import re
import time
from functools import cache

import numpy as np

from memory_site.core.ai.base import EmbeddingError

logger = logging.getLogger(__name__)

# However large the configured backoff, one wait never exceeds this.
MAX_BACKOFF_SECONDS = 30.0
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
# Words that say nothing of what a text is about: the Snowball English stop words (the list
# PostgreSQL's `english` text search configuration uses), so that a question's "how did"
# does not make it similar to every question the agent asked.
_STOPWORDS = frozenset([
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "did", "do", "does", "doing", "don", "down", "during", "each", "few", "for",
    "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself",
    "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just",
    "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once",
    "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "s", "same", "she",
    "should", "so", "some", "such", "t", "than", "that", "the", "their", "theirs", "them",
    "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too",
    "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which",
    "while", "who", "whom", "why", "will", "with", "you", "your", "yours", "yourself",
    "yourselves",
])


def _stem(word: str) -> str:
    for suffix in ("'s", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _features(text: str) -> list[str]:
    words = [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]
    bigrams = [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
    return words + bigrams


@cache
def _rotation_signs(length: int, seed: bytes = b"") -> np.ndarray:
    """Fixed random signs (a diagonal D of the rotation), the same on every machine."""
    digest = hashlib.shake_128(b"legacy-memory hashing rotation" + seed).digest(length)
    return np.array([1.0 if byte & 1 else -1.0 for byte in digest])


def _hadamard(block: np.ndarray) -> np.ndarray:
    """The normalised Walsh-Hadamard transform of each row (a power-of-two length): log2(size)
    passes of sums and differences, an orthogonal matrix."""
    rows, size = block.shape
    h = 1
    while h < size:
        pairs = block.reshape(rows, size // (2 * h), 2, h)
        block = np.stack((pairs[:, :, 0] + pairs[:, :, 1],
                          pairs[:, :, 0] - pairs[:, :, 1]), axis=2).reshape(rows, size)
        h *= 2
    return block / math.sqrt(size)


def rotate(vectors: np.ndarray) -> np.ndarray:
    """Each row times a fixed orthogonal matrix: random signs, then the Walsh-Hadamard
    transform (H·D). Cosine similarities are unchanged (up to rounding); a sparse row becomes
    dense, so that its sign bits are a SimHash of it. With dimensions that are not a power of
    two, three such rotations of the largest power-of-two window, at the end, the start and the
    end again (the windows overlap by more than half), so that every slot mixes every other."""
    dimensions = vectors.shape[1]
    size = 1 << (dimensions.bit_length() - 1)
    if size == dimensions:
        return _hadamard(vectors * _rotation_signs(dimensions))
    out = vectors.copy()
    for round_number, start in enumerate((dimensions - size, 0, dimensions - size), start=1):
        window = out[:, start:start + size] * _rotation_signs(size, f"/{round_number}".encode())
        out[:, start:start + size] = _hadamard(window)
    return out


class HashingEmbedder:
    """Feature hashing of stemmed words and word pairs into a unit vector, then a fixed
    random rotation.

    Deterministic and offline: texts that share words land close together, which is
    what retrieval needs when no embedding model is configured. The hashed vector is sparse
    (a message of 20 words touches about 40 of 1,024 slots); its sign bits, which the search
    compares before re-ranking by cosine (pgvector's binary_quantize), would mostly say how
    short a text is. The rotation (random signs and a Walsh-Hadamard transform, an orthogonal
    matrix) keeps every cosine and spreads each vector over every slot, so that the sign bits
    are a SimHash: their Hamming distance follows the angle, as a dense model's do.
    """

    name = "hashing"

    def __init__(self, dimensions: int):
        self.dimensions = dimensions

    def _hashed(self, text: str) -> dict[int, float]:
        """The sparse vector of `text`, slot → value, normalised (empty text: slot 0)."""
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
        norm = math.sqrt(sum(slots[i] * slots[i] for i in sorted(slots)))
        if norm == 0.0:
            # Cosine distance is undefined for a zero vector; give empty text a fixed direction.
            return {0: 1.0}
        return {index: value / norm for index, value in slots.items()}

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        hashed = np.zeros((len(texts), self.dimensions))
        for row, text in enumerate(texts):
            for index, value in self._hashed(text).items():
                hashed[row, index] = value
        return rotate(hashed).tolist()


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
