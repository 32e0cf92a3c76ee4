"""Deleting one conversation with everything taken from it (docs/conversation-memory.md)."""

import logging

from django.db import transaction

from agent_memory.services import place_mentions_delete_for_conversation
from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message
from facts.services import facts_release_conversation
from memory_site.core.errors import NotFound

logger = logging.getLogger(__name__)


def conversation_delete(*, conversation: Conversation, keep_facts: bool = False) -> dict[str, int]:
    """Delete the conversation, its messages, rolling summaries, archived chunks (with their
    embeddings) and its place mentions, in one transaction; the facts its user took from it
    go too, unless `keep_facts`: then they stay theirs with the source cleared. Agent-memory
    versions that name it as their source keep their text and lose the link.

    The caller has scoped the conversation to its user (selectors.conversation_for_user).
    The conversation's row is locked first, as every pipeline write locks it
    (summarization._lock_conversation): a summarisation job writing now finishes before the
    delete and its rows go with the rest, and one writing later finds the conversation gone
    and stops. NotFound when it was deleted meanwhile.

    Returns the counts per kind: conversations, messages, summaries, chunks,
    place_mentions, facts (deleted) and facts_kept.
    """
    with transaction.atomic():
        locked = (
            # Only the conversation's row: the user's row is agent_memory's lock.
            Conversation.objects.select_for_update(of=("self",)).select_related("user")
            .filter(pk=conversation.pk).first()
        )
        if locked is None:
            raise NotFound()
        place_mentions = place_mentions_delete_for_conversation(conversation=locked)
        facts = facts_release_conversation(
            conversation=locked, user=locked.user, keep=keep_facts
        )
        _, deleted = Conversation.objects.filter(pk=locked.pk).delete()
    counts = {
        "conversations": deleted.get(Conversation._meta.label, 0),
        "messages": deleted.get(Message._meta.label, 0),
        "summaries": deleted.get(ConversationMemory._meta.label, 0),
        "chunks": deleted.get(ConversationChunk._meta.label, 0),
        "place_mentions": place_mentions,
        "facts": 0 if keep_facts else facts,
        "facts_kept": facts if keep_facts else 0,
    }
    logger.info("Deleted conversation %s of user %s: %s", locked.pk, locked.user_id, counts)
    return counts
