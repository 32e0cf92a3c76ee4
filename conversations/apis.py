"""REST endpoints of conversations, their messages, rolling summaries and archived chunks."""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations import selectors, services
from conversations.serializers import (
    ConversationChunkSerializer,
    ConversationDetailSerializer,
    ConversationInputSerializer,
    ConversationListQuerySerializer,
    ConversationMemorySerializer,
    ConversationSerializer,
    MessageInputSerializer,
    MessageListQuerySerializer,
    MessageSerializer,
)
from facts.selectors import legacy_for_member
from memory_site.api import Conflict, error_responses, paginate, paginated
from memory_site.drf import service_errors

IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key", str, OpenApiParameter.HEADER, required=False,
    description=(
        "Repeat a request with the same key and nothing is written twice. At most "
        f"{services.IDEMPOTENCY_KEY_MAX_CHARS} printable ASCII characters."
    ),
)


def idempotency_key(request: Request) -> str | None:
    """The request's Idempotency-Key header, None without one; a malformed key is a 400."""
    with service_errors():
        return services.validate_idempotency_key(request.headers.get("Idempotency-Key"))


class ConversationListCreateApi(APIView):
    pagination_class = paginated("conversations")

    @extend_schema(
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
        request=ConversationInputSerializer,
        responses={
            201: ConversationDetailSerializer,
            **error_responses(400, 401, 404, descriptions={
                404: "No legacy of mine has that legacy_id."}),
        },
    )
    def post(self, request: Request) -> Response:
        data = ConversationInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        legacy = legacy_for_member(user=request.user, legacy_id=data.validated_data["legacy_id"])
        with service_errors():
            conversation = services.conversation_create(
                user=request.user,
                legacy=legacy,
                title=data.validated_data["title"],
                persona=data.validated_data["persona"],
            )
        return Response(
            ConversationDetailSerializer(conversation).data, status=status.HTTP_201_CREATED
        )


class ConversationDetailApi(APIView):
    @extend_schema(responses={200: ConversationDetailSerializer, **error_responses(401, 404)})
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = selectors.conversation_for_user(
            user=request.user, conversation_id=conversation_id
        )
        return Response(ConversationDetailSerializer(conversation).data)


class MessageListCreateApi(APIView):
    pagination_class = paginated("messages")

    @extend_schema(
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
                400, 401, 404, 409,
                descriptions={409: "The Idempotency-Key was used for another message (other "
                              "role or content); nothing written."},
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
        try:
            with service_errors():
                message, created = services.message_append(
                    conversation=conversation,
                    idempotency_key=key,
                    **data.validated_data,
                )
        except services.IdempotencyConflict as exc:
            raise Conflict(str(exc)) from exc
        return Response(
            MessageSerializer(message).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class ConversationMemoryListApi(APIView):
    pagination_class = paginated("memories")

    @extend_schema(
        responses={200: ConversationMemorySerializer(many=True), **error_responses(401, 404)}
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
        responses={200: ConversationChunkSerializer(many=True), **error_responses(401, 404)}
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = selectors.conversation_for_user(
            user=request.user, conversation_id=conversation_id
        )
        chunks = selectors.archived_chunks_for_conversation(conversation=conversation)
        return paginate(request, chunks, ConversationChunkSerializer, "chunks", view=self)


class ConversationCloseApi(APIView):
    @extend_schema(
        request=None, responses={200: ConversationDetailSerializer, **error_responses(401, 404)}
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        conversation = selectors.conversation_for_user(
            user=request.user, conversation_id=conversation_id
        )
        conversation = services.conversation_close(conversation=conversation)
        return Response(ConversationDetailSerializer(conversation).data)
