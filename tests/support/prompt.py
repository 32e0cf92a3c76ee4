"""The prompt blocks of one user's agent memories and places, as the context packet renders them."""

from agent_memory.selectors import active_memories_for_user, places_for_user
from conversations import prompt


def memory_block(user) -> str:
    return prompt.memory_section(active_memories_for_user(user)).render()


def places_block(user) -> str:
    return prompt.places_section(places_for_user(user)).render()
