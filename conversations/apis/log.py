"""REST endpoints of conversations, their messages, rolling summaries and archived chunks."""

from collections.abc import Collection

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations import selectors, services
from conversations.serializers import (
    ConversationChunkSerializer,
    ConversationDeletedSerializer,
    ConversationDeleteQuerySerializer,
    ConversationDetailSerializer,
    ConversationInputSerializer,
    ConversationListQuerySerializer,
    ConversationMemorySerializer,
    ConversationSerializer,
    MessageBatchInputSerializer,
    MessageBatchSerializer,
    MessageInputSerializer,
    MessageListQuerySerializer,
    MessageSerializer,
)
from facts.selectors import legacy_for_member
from memory_site.core.api import error_responses, paginate, paginated

IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key", str, OpenApiParameter.HEADER, required=False,
    description=(
        "Repeat a request with the same key and nothing is written twice. At most "
        f"{services.IDEMPOTENCY_KEY_MAX_CHARS} printable ASCII characters."
    ),
)


def idempotency_key(request: Request) -> str | None:
    """The request's Idempotency-Key header, None without one; a malformed key is a 400."""
    return services.validate_idempotency_key(request.headers.get("Idempotency-Key"))


def postable_roles(request: Request) -> Collection[str] | None:
    """The roles the caller may post: a person signed in to the dashboard (a session) only their
    own `user` messages; an integration credential (an API token, a platform key) every role
    (None)."""
    if isinstance(request.successful_authenticator, SessionAuthentication):
        return services.PERSON_ROLES
    return None


ROLE_403 = ("Signed in to the dashboard (a session), a person may post only `user` messages; "
            "nothing written.")


class ConversationListCreateApi(APIView):
    pagination_class = paginated("conversations")

    @extend_schema(
        summary="List my conversations",
        description="My own conversations, newest first, in the legacies I belong to; "
        "`?legacy_id=` keeps one legacy's. A page: `?limit=` and `?offset=`.",
        parameters=[ConversationListQuerySerializer],
        responses={200: ConversationSerializer(many=True), **error_responses(400, 401)},
    )
    def get(self, request: Request) -> Response:
        query = ConversationListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        conversations = selectors.conversations_for_user(request.user).select_related("legacy")
        if legacy_id := query.validated_data.get("legacy_id"):
            conversations = conversations.filter(legacy_id=legacy_id)
        return paginate(
            request, conversations.order_by("-created_at"), ConversationSerializer,
            "conversations", view=self,
        )

    @extend_schema(
        summary="Start a conversation",
        description="`{legacy_id, title?, persona?}`: any member of the legacy starts a "
        "conversation of their own. `persona` describes the assistant for this conversation "
        "and goes into the first block of its system prompt (at most PERSONA_MAX_CHARS characters and "
        "PERSONA_MAX_TOKENS tokens, else 400). 404 for a legacy I do not belong to. With an "
        "`Idempotency-Key` header, a retry (the same key, legacy, title and persona) answers "
        "200 with the conversation the first request started instead of starting another; the "
        "key with another legacy, title or persona is a 409 and starts nothing.",
        parameters=[IDEMPOTENCY_HEADER],
        request=ConversationInputSerializer,
        responses={
            201: ConversationDetailSerializer,
            200: ConversationDetailSerializer,
            **error_responses(400, 401, 404, 409, descriptions={
                404: "No legacy of mine has that legacy_id.",
                409: "The Idempotency-Key already started a conversation with another legacy, "
                "title or persona."}),
        },
    )
    def post(self, request: Request) -> Response:
        key = idempotency_key(request)
        data = ConversationInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        legacy = legacy_for_member(user=request.user, legacy_id=data.validated_data["legacy_id"])
        conversation, created = services.conversation_start(
            user=request.user,
            legacy=legacy,
            title=data.validated_data["title"],
            persona=data.validated_data["persona"],
            idempotency_key=key,
        )
        return Response(
            ConversationDetailSerializer(conversation).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class ConversationDetailApi(APIView):
    @extend_schema(
        summary="Get one of my conversations",
        description="The conversation with its persona and session state (seed 004). Only "
        "its user sees it: anyone else's is a 404.",
        responses={200: ConversationDetailSerializer, **error_responses(401, 404)},
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = selectors.conversation_for_user(
            user=request.user, conversation_id=conversation_id
        )
        return Response(ConversationDetailSerializer(conversation).data)

    @extend_schema(
        summary="Delete one of my conversations",
        description="Deletes the conversation for good, in one transaction: its messages, "
        "rolling summaries, archived chunks with their embeddings and its place mentions, and "
        "the facts taken from it unless `?keep_facts=true` (they then stay mine with no "
        "source). Agent-memory versions that came from it keep their text. A summarisation "
        "job running on it stops and leaves nothing behind. Answers what was deleted. 400 for "
        "a keep_facts other than true or false; anyone else's conversation is a 404 and "
        "nothing changes. See docs/conversation-memory.md.",
        parameters=[ConversationDeleteQuerySerializer],
        responses={200: ConversationDeletedSerializer, **error_responses(400, 401, 404)},
    )
    def delete(self, request: Request, conversation_id: str) -> Response:
        conversation = selectors.conversation_for_user(
            user=request.user, conversation_id=conversation_id
        )
        query = ConversationDeleteQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        counts = services.conversation_delete(
            conversation=conversation, keep_facts=query.validated_data["keep_facts"]
        )
        return Response(ConversationDeletedSerializer(counts).data)


class MessageListCreateApi(APIView):
    pagination_class = paginated("messages")

    @extend_schema(
        summary="List a conversation's messages",
        description="In sequence order; `?after=<sequence>` gives only later ones. Only the "
        "conversation's user (404 otherwise). A page: `?limit=` and `?offset=`.",
        parameters=[MessageListQuerySerializer],
        responses={200: MessageSerializer(many=True), **error_responses(400, 401, 404)},
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = selectors.conversation_for_user(
            user=request.user, conversation_id=conversation_id
        )
        query = MessageListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        messages = selectors.messages_for_conversation(
            conversation=conversation, after=query.validated_data.get("after")
        )
        return paginate(request, messages, MessageSerializer, "messages", view=self)

    @extend_schema(
        summary="Append a message",
        description="`{role, content}` with the next sequence number, committed before the "
        "answer; an assistant message enqueues the summarisation job. Only the conversation's "
        "user (404 otherwise); 400 for empty, too long or NUL-carrying content. Send an "
        "Idempotency-Key to retry safely. Every role with an integration credential (API token, "
        "platform key); with a dashboard session only `user` (403 otherwise).",
        request=MessageInputSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={
            201: MessageSerializer,
            200: OpenApiResponse(
                MessageSerializer,
                description="The message saved earlier with this Idempotency-Key; nothing "
                "written.",
            ),
            **error_responses(
                400, 401, 403, 404, 409,
                descriptions={
                    403: ROLE_403,
                    409: "The Idempotency-Key was used for another message (other role or "
                    "content) or for a batch; nothing written.",
                },
            ),
        },
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        conversation = selectors.conversation_for_user(
            user=request.user, conversation_id=conversation_id
        )
        key = idempotency_key(request)
        data = MessageInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        message, created = services.message_append(
            conversation=conversation, idempotency_key=key, allowed_roles=postable_roles(request),
            **data.validated_data,
        )
        return Response(
            MessageSerializer(message).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class MessageBatchCreateApi(APIView):
    @extend_schema(
        summary="Import a batch of messages",
        description="`{messages: [{role, content, created_at?}, …]}`: 1 to IMPORT_MAX_BATCH "
        "messages of an existing history appended in one transaction with the next sequences, "
        "all or nothing; answers `{messages, total}` before the archive catches up in the "
        "background (the summarisation job is enqueued once). `created_at` keeps the original "
        "time: not in the future, not before the message before it nor the conversation's last "
        "message. A bad message is a 400 whose `errors.messages` names its index "
        "(`{\"messages\": {\"3\": {\"content\": [...]}}}`); nothing is written. With an "
        "Idempotency-Key the same batch sent again writes nothing and answers 200 with the "
        "messages saved the first time. Every role with an integration credential; with a "
        "dashboard session only `user`. Only the conversation's user (404 otherwise). See "
        "docs/conversation-memory.md#importing-histories.",
        request=MessageBatchInputSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={
            201: MessageBatchSerializer,
            200: OpenApiResponse(
                MessageBatchSerializer,
                description="The batch saved earlier with this Idempotency-Key; nothing written.",
            ),
            **error_responses(
                400, 401, 403, 404, 409,
                descriptions={
                    400: "Invalid input, nothing written: `errors.messages` is a list of "
                    "messages for the whole batch (none, or over IMPORT_MAX_BATCH) or an object "
                    "of the bad messages' errors by index.",
                    403: ROLE_403,
                    409: "Nothing written: the Idempotency-Key was used for another batch, a "
                    "message or a turn (`conflict`), or the batch's times conflict with the "
                    "timeline (`timeline_conflict`: a `created_at` in the future, before the message "
                    "before it or before the conversation's last message; `errors.messages` "
                    "by index, as for a 400).",
                },
            ),
        },
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        conversation = selectors.conversation_for_user(
            user=request.user, conversation_id=conversation_id
        )
        key = idempotency_key(request)
        data = MessageBatchInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        batch = services.messages_import(
            conversation=conversation, messages=data.validated_data["messages"],
            idempotency_key=key, allowed_roles=postable_roles(request),
        )
        return Response(
            MessageBatchSerializer(batch).data,
            status=status.HTTP_201_CREATED if batch.created else status.HTTP_200_OK,
        )


class RollingSummaryListApi(APIView):
    pagination_class = paginated("memories")

    @extend_schema(
        summary="List a conversation's rolling summaries",
        description="Seed 002's rolling-summary versions, oldest first, with their status "
        "(processing, completed, failed) and the chain (`base_memory_id`). Only the "
        "conversation's user (404 otherwise). A page.",
        responses={200: ConversationMemorySerializer(many=True), **error_responses(401, 404)},
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = selectors.conversation_for_user(
            user=request.user, conversation_id=conversation_id
        )
        memories = selectors.rolling_summaries_for_conversation(conversation=conversation)
        return paginate(request, memories, ConversationMemorySerializer, "memories", view=self)


class ConversationChunkListApi(APIView):
    pagination_class = paginated("chunks")

    @extend_schema(
        summary="List a conversation's archived chunks",
        description="Seed 000's archived summaries of message ranges (end exclusive), in "
        "message order. Only the conversation's user (404 otherwise). A page.",
        responses={200: ConversationChunkSerializer(many=True), **error_responses(401, 404)},
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = selectors.conversation_for_user(
            user=request.user, conversation_id=conversation_id
        )
        chunks = selectors.archived_chunks_for_conversation(conversation=conversation)
        return paginate(request, chunks, ConversationChunkSerializer, "chunks", view=self)


class ConversationCloseApi(APIView):
    @extend_schema(
        summary="Close a conversation",
        description="Seed 004's clean shutdown: status `shutdown_clean` at once, then a job "
        "archives the unarchived tail and writes the final summary. Closing again changes "
        "nothing and enqueues the job again (a retry). Only the conversation's user (404 "
        "otherwise).",
        request=None,
        responses={200: ConversationDetailSerializer, **error_responses(401, 404)},
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        conversation = selectors.conversation_for_user(
            user=request.user, conversation_id=conversation_id
        )
        conversation = services.conversation_close(conversation=conversation)
        return Response(ConversationDetailSerializer(conversation).data)
