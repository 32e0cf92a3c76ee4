"""Helpers of the agent-side tests: chunks embedded like the archive job embeds them."""

import random

from conversations.models import Conversation, ConversationChunk
from tests.factories import ConversationChunkFactory


def chunk_for(conversation: Conversation, start: int, end: int, content: str,
              embedding: list[float] | None = None) -> ConversationChunk:
    extra = {} if embedding is None else {"embedding": embedding}
    return ConversationChunkFactory(conversation=conversation, content=content,
                                    message_range_start=start, message_range_end=end, **extra)


def unit(vector: list[float]) -> list[float]:
    norm = sum(v * v for v in vector) ** 0.5
    return [v / norm for v in vector]


def near(vector: list[float], noise: float, seed: int) -> list[float]:
    """A unit vector at a controlled distance from `vector`: more noise, further away."""
    rng = random.Random(seed)
    return unit([v + rng.gauss(0.0, noise) for v in vector])


def cosine_distance(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return 1.0 - dot / ((sum(x * x for x in a) ** 0.5) * (sum(y * y for y in b) ** 0.5))


WALTER_SAID = "Walter sang in the church choir every Sunday."


def walter_archived_then_corrected(family, capture) -> Conversation:
    """The new-user walkthrough (offline providers): one sentence said and archived in its own
    conversation, corrected in another. `capture` is django_capture_on_commit_callbacks, so
    that the archive job runs. Returns the archived conversation."""
    from conversations.services import conversation_close, message_append
    from tests.factories import ConversationFactory

    walter = ConversationFactory(user=family.owner, legacy=family.legacy)
    correction = ConversationFactory(user=family.owner, legacy=family.legacy)
    with capture(execute=True):
        message_append(conversation=walter, role="user", content=WALTER_SAID)
        conversation_close(conversation=walter)
        message_append(conversation=correction, role="user",
                       content="Actually it was Tuesdays, not Sundays.")
    return walter
