"""The /memory chat command (seed 003): list memories or delete one, straight, without the agent."""

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from agent_memory import selectors, services
from agent_memory.models import ChangeOrigin
from memory_site.core.errors import NotFound

USAGE = (
    "Usage:\n"
    "/memory or /memory list — show what I remember about you\n"
    "/memory delete <id> — forget one memory (the id is shown in the list)"
)


@dataclass(frozen=True)
class CommandReply:
    """The text to show the user, and the HTTP status the commands API answers with."""

    reply: str
    status: int = 200
    code: str = "ok"


def format_memory_list(user: AbstractBaseUser) -> str:
    """Seed 003's `/memory` answer: active memories grouped by category, with their ids."""
    grouped = selectors.active_memories_by_category(user)
    if not grouped:
        return (
            "📝 You have no memories yet.\n\n"
            "I'll offer to remember things you tell me, such as people and preferences."
        )
    lines = ["📝 Your memories:", ""]
    for category, memories in grouped:
        lines.append(f"**{category.title()}**")
        lines.extend(f"• [{m.pk}] {m.content}" for m in memories)
        lines.append("")
    lines.append("Use /memory delete <id> to remove a memory.")
    return "\n".join(lines)


def is_memory_command(text: object) -> bool:
    """Whether a chat message is a /memory command (its first word, any case): the chat page
    and the turn API run it with command_run instead of an agent turn."""
    words = text.split(maxsplit=1) if isinstance(text, str) else []
    return bool(words) and words[0].lower() == "/memory"


def command_run(*, user: AbstractBaseUser, text: object) -> CommandReply:
    """Run a chat command. Unknown or incomplete commands get the usage text (400); an id
    that is not one of the user's active memories gets a clear reply (404)."""
    words = text.split() if isinstance(text, str) else []
    if not words or words[0].lower() != "/memory":
        return CommandReply(f"I don't know that command.\n\n{USAGE}", 400, "unknown_command")
    action = words[1].lower() if len(words) > 1 else "list"
    if action == "list" and len(words) <= 2:
        return CommandReply(format_memory_list(user))
    if action == "delete":
        if len(words) != 3:
            return CommandReply(
                f"Which memory? Give its id, e.g. /memory delete a1b2c3d4.\n\n{USAGE}",
                400,
                "invalid",
            )
        memory_id = words[2].strip("[]")
        try:
            memory = selectors.active_memory_for_user(user=user, memory_id=memory_id)
            content = services.memory_delete(user=user, memory=memory, origin=ChangeOrigin.COMMAND)
        except NotFound:
            return CommandReply(
                f"I have no memory with id '{memory_id}'. Use /memory to see the ids.",
                404,
                "not_found",
            )
        return CommandReply(f"Deleted: '{content}'")
    return CommandReply(f"I don't know that /memory command.\n\n{USAGE}", 400, "invalid")
