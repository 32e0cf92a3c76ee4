"""Embedding retrieval units: the model key stored with each vector, and the rule for long texts.

A vector is stored with the key of the model that made it (`model_key()`); retrieval ranks only
vectors of the current key, so vectors of two models are never compared. A text longer than
EMBEDDING_MAX_TOKENS is embedded in parts of at most that many tokens, and its vector is the
normalised, token-weighted mean of the parts' vectors (docs/conversation-memory.md).
"""

import math

from django.conf import settings

from memory_site.core.ai import EmbeddingError, get_embedder
from memory_site.core.ai.tokens import encoding


def model_key() -> str:
    """What identifies the current embedding model: provider, model and dimensions."""
    if settings.EMBEDDING_PROVIDER == "hashing":
        # "rotated": the offline embedder's vectors since the rotation that makes their sign
        # bits a SimHash (memory_site.core.ai.embeddings); "hashing/{dimensions}" were the
        # sparse vectors before it, ranked by words only until `manage.py reembed`.
        return f"hashing/rotated/{settings.EMBEDDING_DIMENSIONS}"
    return (f"{settings.EMBEDDING_PROVIDER}/{settings.EMBEDDING_MODEL}/"
            f"{settings.EMBEDDING_DIMENSIONS}")


def text_parts(text: str) -> list[tuple[str, int]]:
    """`text` cut into parts of at most EMBEDDING_MAX_TOKENS tokens, with each part's token
    count; a text within the limit is one part. Empty text is one empty part."""
    limit = max(settings.EMBEDDING_MAX_TOKENS, 1)
    tokens = encoding().encode(text, disallowed_special=())
    if len(tokens) <= limit:
        return [(text, max(len(tokens), 1))]
    return [
        (encoding().decode(tokens[i:i + limit]), len(tokens[i:i + limit]))
        for i in range(0, len(tokens), limit)
    ]


def _mean(vectors: list[list[float]], weights: list[int]) -> list[float]:
    summed = [
        sum(weight * vector[i] for vector, weight in zip(vectors, weights, strict=True))
        for i in range(len(vectors[0]))
    ]
    norm = math.sqrt(sum(v * v for v in summed))
    if norm == 0.0:
        return vectors[0]
    return [v / norm for v in summed]


def embed_texts(texts: list[str]) -> list[list[float]]:
    """One vector per text, of EMBEDDING_DIMENSIONS, long texts embedded in parts; requests of
    at most EMBEDDING_BATCH_SIZE parts. EmbeddingError when the provider fails or answers
    vectors of another size."""
    parts: list[str] = []
    owners: list[tuple[int, int]] = []  # (text index, token count) per part
    for index, text in enumerate(texts):
        for part, tokens in text_parts(text):
            parts.append(part)
            owners.append((index, tokens))
    batch = max(settings.EMBEDDING_BATCH_SIZE, 1)
    vectors: list[list[float]] = []
    for start in range(0, len(parts), batch):
        chunk = parts[start:start + batch]
        answered = get_embedder().embed(chunk)
        if len(answered) != len(chunk) or any(
            len(v) != settings.EMBEDDING_DIMENSIONS for v in answered
        ):
            raise EmbeddingError(
                f"the embedder did not return {len(chunk)} vectors of "
                f"{settings.EMBEDDING_DIMENSIONS} dimensions"
            )
        vectors.extend(answered)
    grouped: dict[int, tuple[list[list[float]], list[int]]] = {}
    for (index, tokens), vector in zip(owners, vectors, strict=True):
        grouped.setdefault(index, ([], []))
        grouped[index][0].append(vector)
        grouped[index][1].append(tokens)
    return [
        grouped[i][0][0] if len(grouped[i][0]) == 1 else _mean(*grouped[i])
        for i in range(len(texts))
    ]
