"""The caller's own data: export everything the service stores about them, or erase it.

GET /api/me/data serializes privacy.selectors.user_data_export, which composes each app's
`user_data_export(user)` selector; DELETE /api/me/data runs privacy.services.user_data_erase,
each app's `user_data_erase(*, user=...)` inside one transaction. What is exported, erased and
kept, and why, is in docs/privacy.md.
"""

import re

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_site.core.api import error_responses
from memory_site.privacy.selectors import user_data_export
from memory_site.privacy.serializers import ErasedSerializer, ExportSerializer
from memory_site.privacy.services import user_data_erase


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
        "token and every signed-in session included, with the job-queue rows, webhook "
        "deliveries and login records that name you, and answers what was erased. A legacy "
        "with other members passes to the longest-standing one; a legacy with no one else is "
        "deleted, unless people removed from it earlier still have rows there (then it stays, "
        "with no member, until theirs go too). The account keeps only its username and "
        "password.",
        request=None,
        responses={200: ErasedSerializer, **error_responses(401)},
    )
    def delete(self, request: Request) -> Response:
        counts = user_data_erase(user=request.user)
        return Response(
            ErasedSerializer({"erased": counts, "account_kept": request.user.get_username()}).data
        )
