"""Reads of the caller's own data across every app: the export (GET /api/me/data)."""

from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.utils import timezone
from rest_framework.authtoken.models import Token

from agent_memory import selectors as agent_memory_selectors
from conversations import selectors as conversations_selectors
from facts import selectors as facts_selectors

EXPORT_SCHEMA_VERSION = "1.2"  # 1.1: invitations; 1.2: conversations' called_name
EXPORT_NOTES = [
    "Everything this service stores about you: your account, your memberships, the "
    "invitations you sent or received, your "
    "conversations with their messages, session state, rolling summaries and archived "
    "chunks, the legacy facts you wrote, your agent memories with every version (deleted "
    "ones too), and your places with their mentions.",
    "Nothing of other people: other members of a legacy and their facts, shared or not, "
    "are not part of your export.",
    "Archived chunks come without their embedding vectors: they are computed from the "
    "chunk's content by the embedding model and are not readable on their own.",
    "Your API token's key is not exported: it is a credential, not data.",
]


@dataclass
class UserExport:
    """Everything the service stores about `user`: each app's rows (`parts`), serialized by
    ExportSerializer."""

    user: AbstractBaseUser
    api_tokens: list[Token]
    parts: dict[str, QuerySet]
    exported_at: datetime = field(default_factory=timezone.now)
    schema_version: str = EXPORT_SCHEMA_VERSION
    metadata: dict = field(
        default_factory=lambda: {"notes": EXPORT_NOTES, "embeddings_included": False}
    )


def user_data_export(user: AbstractBaseUser) -> UserExport:
    """Everything the service stores about `user`, in a bounded number of queries (each app's
    part prefetches its rows)."""
    parts: dict[str, QuerySet] = {}
    for part in (
        facts_selectors.user_data_export(user),
        conversations_selectors.user_data_export(user),
        agent_memory_selectors.user_data_export(user),
    ):
        if clash := parts.keys() & part.keys():
            raise RuntimeError(f"two parts of the export both name {sorted(clash)}")
        parts.update(part)
    tokens = list(Token.objects.filter(user=user).order_by("created"))
    return UserExport(user=user, api_tokens=tokens, parts=parts)
