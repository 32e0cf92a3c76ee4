"""Row counts to prove that a denied request changed nothing."""

from conversations.models import Conversation, Message
from facts.models import Legacy, LegacyMembership


def family_and_conversation_rows() -> tuple[int, int, int, int]:
    """Legacies, memberships, conversations and messages: everything the legacies and
    conversations APIs write."""
    return (
        Legacy.objects.count(),
        LegacyMembership.objects.count(),
        Conversation.objects.count(),
        Message.objects.count(),
    )
