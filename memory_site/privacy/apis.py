"""The caller's own data: export everything the service stores about them, or erase it.

GET /api/me/data composes each app's `user_data_export(user)` selector, DELETE
/api/me/data each app's `user_data_erase(*, user=...)` service inside one transaction.
What is exported, erased and kept, and why, is in docs/privacy.md.
"""

import re
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_memory import selectors as agent_memory_selectors
from agent_memory import services as agent_memory_services
from conversations import selectors as conversations_selectors
from conversations import services as conversations_services
from facts import selectors as facts_selectors
from facts import services as facts_services
from memory_site.core.api import error_responses
from memory_site.privacy.serializers import ExportSerializer

EXPORT_SCHEMA_VERSION = "1.0"
EXPORT_NOTES = [
    "Everything this service stores about you: your account, your memberships, your "
    "conversations with their messages, session state, rolling summaries and archived "
    "chunks, the legacy facts you wrote, your agent memories with every version (deleted "
    "ones too), and your places with their mentions.",
    "Nothing of other people: other members of a legacy and their facts, shared or not, "
    "are not part of your export.",
    "Archived chunks come without their embedding vectors: they are computed from the "
    "chunk's content by the embedding model and are not readable on their own.",
    "Your API token's key is not exported: it is a credential, not data.",
]


# --- Selectors -------------------------------------------------------------------------------


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


# --- Services ---------------------------------------------------------------------------------


def account_erase(*, user: AbstractBaseUser) -> dict[str, int]:
    """Delete every API token of the user (the one of this request too) and clear the
    profile fields; the account row stays with its username and password."""
    with transaction.atomic():
        tokens, _ = Token.objects.filter(user=user).delete()
        get_user_model().objects.filter(pk=user.pk).update(email="", first_name="", last_name="")
    return {"api_tokens": tokens}


def user_data_erase(*, user: AbstractBaseUser) -> dict[str, int]:
    """Erase everything the service stores about `user` in one transaction; a failure in any
    step leaves everything as it was. Returns the number of rows erased (or, for
    `legacies_transferred`, handed on) per kind.

    Conversations go first: a legacy that facts' erase deletes would otherwise take the
    user's conversations with it uncounted, and facts knows nothing of conversations.
    """
    counts: dict[str, int] = {}
    with transaction.atomic():
        # One erase per user at a time, and no memory write of theirs in between.
        get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk").get()
        for step in (
            conversations_services.user_data_erase,
            agent_memory_services.user_data_erase,
            facts_services.user_data_erase,
            account_erase,
        ):
            counts.update(step(user=user))
    return counts


# --- API ---------------------------------------------------------------------------------------


class ErasedCountsSerializer(serializers.Serializer):
    conversations = serializers.IntegerField()
    messages = serializers.IntegerField()
    summaries = serializers.IntegerField()
    chunks = serializers.IntegerField()
    agent_memories = serializers.IntegerField()
    memory_versions = serializers.IntegerField()
    places = serializers.IntegerField()
    place_mentions = serializers.IntegerField()
    facts = serializers.IntegerField()
    memberships = serializers.IntegerField()
    legacies_deleted = serializers.IntegerField()
    legacies_transferred = serializers.IntegerField()
    api_tokens = serializers.IntegerField()


class ErasedSerializer(serializers.Serializer):
    erased = ErasedCountsSerializer()
    account_kept = serializers.CharField(help_text="The username; the account has no data left.")


def export_filename(username: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", username)
    return f"legacy-memory-export-{safe}.json"


class MyDataApi(APIView):
    """GET: download everything stored about me. DELETE: erase it."""

    # The export is a file to keep, so it is JSON even for a browser asking for HTML.
    renderer_classes = [JSONRenderer]

    @extend_schema(
        summary="Export all my data",
        description="Everything the service stores about me, as one JSON attachment: "
        "memberships, conversations, facts I wrote, agent memories and places. Nothing of "
        "other members is in it.",
        responses={
            200: OpenApiResponse(
                ExportSerializer,
                description="A JSON attachment: schema_version, exported_at, metadata, account, "
                "memberships, conversations (messages, summaries, chunks), facts, "
                "agent_memories (with versions) and places (with mentions). See docs/privacy.md.",
            ),
            **error_responses(401),
        },
    )
    def get(self, request: Request) -> Response:
        export = ExportSerializer(user_data_export(request.user)).data
        filename = export_filename(request.user.get_username())
        return Response(
            export, headers={"Content-Disposition": f'attachment; filename="{filename}"'}
        )

    @extend_schema(
        summary="Erase all my data",
        description="Erases everything the export holds in one transaction, this request's "
        "token included, and answers what was erased. A legacy with other members passes to "
        "the longest-standing one, a legacy with no one else is deleted; the account keeps "
        "only its username and password.",
        request=None,
        responses={200: ErasedSerializer, **error_responses(401)},
    )
    def delete(self, request: Request) -> Response:
        counts = user_data_erase(user=request.user)
        return Response(
            ErasedSerializer({"erased": counts, "account_kept": request.user.get_username()}).data
        )
