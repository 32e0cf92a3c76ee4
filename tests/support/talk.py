"""A conversation talked through at once: the user's lines about Rose, the agent's prompts."""

from conversations.models import Conversation
from tests.factories import import_messages

USER_LINES = [
    "Rose loved fishing at the lake cabin every summer.",
    "Rose was a nurse at St. Mary's Hospital in Dayton.",
    "Rose was born in 1931 in Ohio.",
    "Every Sunday Rose baked rhubarb pie for the neighbours.",
    "Rose's favourite song was Moon River.",
]


def talk(conversation: Conversation, count: int) -> None:
    """`count` messages written at once, the user's cycling through USER_LINES."""
    import_messages(conversation, (
        ("user", f"{USER_LINES[(i // 2) % len(USER_LINES)]} This was turn {i}.") if i % 2 == 0
        else ("assistant", "Thank you for telling me. What else do you remember?")
        for i in range(count)
    ))
