"""Writes of conversations and the append-only message log."""

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from conversations.models import Conversation, Message
from facts.models import Legacy
from memory_site.ai import count_tokens

APPENDABLE_ROLES = {choice for choice in Message.Role.values}


def conversation_create(
    *, user: AbstractBaseUser, legacy: Legacy, title: str = "", persona: str = ""
) -> Conversation:
    """Start a conversation; the caller has already checked that `user` is a member of `legacy`."""
    title = (title or "").strip()
    persona = (persona or "").strip()
    errors = {}
    if len(title) > settings.CONVERSATION_TITLE_MAX_CHARS:
        errors["title"] = [f"At most {settings.CONVERSATION_TITLE_MAX_CHARS} characters."]
    if len(persona) > settings.PERSONA_MAX_CHARS:
        errors["persona"] = [f"At most {settings.PERSONA_MAX_CHARS} characters."]
    if errors:
        raise ValidationError(errors)
    return Conversation.objects.create(user=user, legacy=legacy, title=title, persona=persona)


def validate_message_content(content: str) -> str:
    if not isinstance(content, str) or not content.strip():
        raise ValidationError({"content": ["A message needs some content."]})
    if len(content) > settings.MESSAGE_MAX_CHARS:
        raise ValidationError(
            {"content": [f"At most {settings.MESSAGE_MAX_CHARS} characters."]}
        )
    return content


def message_append(
    *,
    conversation: Conversation,
    role: str,
    content: str,
    metadata: dict | None = None,
    idempotency_key: str | None = None,
) -> tuple[Message, bool]:
    """Append a message with the next gap-free sequence number.

    Returns (message, created). With an idempotency key already used in this
    conversation, the earlier message is returned and nothing is written.
    """
    if role not in APPENDABLE_ROLES:
        raise ValidationError({"role": [f"Must be one of: {', '.join(sorted(APPENDABLE_ROLES))}."]})
    validate_message_content(content)
    if idempotency_key:
        existing = Message.objects.filter(
            conversation=conversation, idempotency_key=idempotency_key
        ).first()
        if existing is not None:
            return existing, False
    try:
        with transaction.atomic():
            # The row lock serialises appends to one conversation; the counter is rolled
            # back with the message, so sequences never have gaps.
            locked = Conversation.objects.select_for_update().get(pk=conversation.pk)
            now = timezone.now()
            message = Message.objects.create(
                conversation=locked,
                sequence=locked.message_count,
                role=role,
                content=content,
                token_count=count_tokens(content),
                metadata=metadata or {},
                idempotency_key=idempotency_key or None,
            )
            locked.message_count += 1
            locked.last_message_at = now
            update_fields = ["message_count", "last_message_at", "updated_at"]
            if locked.status == Conversation.Status.SHUTDOWN_CLEAN:
                locked.status = Conversation.Status.RESUMING
                update_fields.append("status")
            locked.save(update_fields=update_fields)
    except IntegrityError:
        if idempotency_key:
            existing = Message.objects.filter(
                conversation=conversation, idempotency_key=idempotency_key
            ).first()
            if existing is not None:
                return existing, False
        raise
    conversation.message_count = locked.message_count
    conversation.last_message_at = locked.last_message_at
    conversation.status = locked.status
    return message, True
