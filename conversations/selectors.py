"""Reads of conversations and messages, always scoped to the conversation's own user."""

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.http import Http404

from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message


def conversations_for_user(user: AbstractBaseUser) -> QuerySet[Conversation]:
    """The user's own conversations, in legacies they still belong to."""
    if not user.is_authenticated:
        return Conversation.objects.none()
    return Conversation.objects.filter(user=user, legacy__memberships__user=user)


def conversation_for_user(*, user: AbstractBaseUser, conversation_id: object) -> Conversation:
    """The conversation if it is the user's; otherwise Http404, as if it did not exist."""
    conversation = (
        conversations_for_user(user).select_related("legacy").filter(pk=conversation_id).first()
    )
    if conversation is None:
        raise Http404("conversation not found")
    return conversation


def messages_for_conversation(
    *, conversation: Conversation, after: int | None = None
) -> QuerySet[Message]:
    messages = Message.objects.filter(conversation=conversation)
    if after is not None:
        messages = messages.filter(sequence__gt=after)
    return messages.order_by("sequence")


# --- Transcript page (dashboard): a conversation's summaries ---------------------------------


def rolling_summaries_for_conversation(*, conversation: Conversation) -> QuerySet[ConversationMemory]:
    """Seed 002's rolling-summary versions of the conversation, oldest first."""
    return ConversationMemory.objects.filter(conversation=conversation).order_by(
        "created_at", "end_sequence"
    )


def archived_chunks_for_conversation(*, conversation: Conversation) -> QuerySet[ConversationChunk]:
    """Seed 000's archived summary chunks of the conversation, in message order."""
    return (
        ConversationChunk.objects.filter(conversation=conversation)
        .defer("embedding")
        .order_by("message_range_start")
    )
