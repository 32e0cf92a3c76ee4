"""REST endpoints of the agent's side: search, the context packet, the agent turn, checkpoints."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations import retrieval
from conversations.agent_serializers import (
    CheckpointResponseSerializer,
    ContextQuerySerializer,
    ContextResponseSerializer,
    SearchQuerySerializer,
    SearchResponseSerializer,
    TurnInputSerializer,
    TurnResponseSerializer,
    context_response,
)
from conversations.apis.log import IDEMPOTENCY_HEADER, idempotency_key
from conversations.checkpoint import checkpoint_snapshot
from conversations.context import build_context
from conversations.selectors import conversation_for_user
from conversations.services import chat_message_answer
from facts.selectors import legacy_for_member
from memory_site.core.api import ErrorSerializer, error_responses
from memory_site.core.throttling import MODEL_CALL_THROTTLES


class LegacySearchApi(APIView):
    throttle_classes = MODEL_CALL_THROTTLES

    @extend_schema(
        summary="Search my earlier conversations about a legacy",
        description="Hybrid search (pgvector + full text, reciprocal rank fusion, recency "
        "and open-loop priority) over every message of both roles and the archived chunks of "
        "my conversations: at most `k` `results`, each a different place (a message with its "
        "neighbours, or a chunk; overlapping units merged), `total` units in scope, "
        "`warnings`. Any member, over "
        "their own conversations only; 400 for an empty or too long `q` or a `k` out of range, "
        "404 for a legacy I do not belong to.",
        parameters=[SearchQuerySerializer],
        responses={200: SearchResponseSerializer, **error_responses(400, 401, 404, 429)},
    )
    def get(self, request: Request, legacy_id: str) -> Response:
        legacy = legacy_for_member(user=request.user, legacy_id=legacy_id)
        query, k = retrieval.validate_search_input(
            query=request.query_params.get("q"), k=request.query_params.get("k")
        )
        result = retrieval.search_conversations(user=request.user, legacy=legacy, query=query, k=k)
        return Response(SearchResponseSerializer(result).data)


class ConversationContextApi(APIView):
    throttle_classes = MODEL_CALL_THROTTLES

    @extend_schema(
        summary="The context for the next LLM call",
        description="Seed 004's context packet: `system_prompt` and `messages` ready for an "
        "OpenAI chat call, in a cache-friendly order and within CONTEXT_TOKEN_BUDGET, with "
        "`parts`, `token_counts`, `cuts` and `warnings`. `?query=` sets what earlier "
        "conversations are searched for (default: the latest user message). Only the "
        "conversation's user (404 otherwise).",
        parameters=[ContextQuerySerializer],
        responses={200: ContextResponseSerializer, **error_responses(400, 401, 404, 429)},
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = conversation_for_user(user=request.user, conversation_id=conversation_id)
        conversation.user = request.user  # its owner, already read: not read again
        query = ContextQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        packet = build_context(conversation=conversation, query=query.validated_data.get("query"))
        return Response(context_response(packet))


class ConversationCheckpointApi(APIView):
    @extend_schema(
        summary="A checkpoint of a conversation",
        description="Seed 004's snapshot, derived from what is stored: session state, the "
        "last turns and the latest summary delta. Only the conversation's user (404 "
        "otherwise).",
        responses={200: CheckpointResponseSerializer, **error_responses(401, 404)},
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = conversation_for_user(user=request.user, conversation_id=conversation_id)
        return Response(
            CheckpointResponseSerializer(checkpoint_snapshot(conversation=conversation)).data
        )


class ConversationTurnApi(APIView):
    throttle_classes = MODEL_CALL_THROTTLES

    @extend_schema(
        summary="Run an agent turn",
        description="`{content}`: saves the user message, builds the context, calls the "
        "language model with the memory tools (their calls run as me), saves and answers the "
        "reply with the context it used. A `/memory` command is answered without the model. "
        "Only the conversation's user (404 otherwise). Send an Idempotency-Key to retry "
        "safely; 502 when the model fails (the user message stays saved).",
        request=TurnInputSerializer,
        parameters=[IDEMPOTENCY_HEADER],
        responses={
            201: TurnResponseSerializer,
            200: OpenApiResponse(
                TurnResponseSerializer,
                description="A retry with the Idempotency-Key of a finished turn: its saved "
                "reply, `replayed: true`, nothing written. Or a `/memory` command (content "
                "whose first word is /memory): its reply, `command: true` and `command_code`, "
                "null messages, nothing written, no model call; a command is not recorded, so "
                "an Idempotency-Key does not replay it (a key already used for a message is a "
                "409).",
            ),
            **error_responses(
                400, 401, 404, 409, 429,
                descriptions={409: "The Idempotency-Key was used for another message or "
                              "a batch (`conflict`; nothing written, not even the user "
                              "message), or a request with it is still running the turn "
                              "(`turn_in_progress`)."},
            ),
            502: OpenApiResponse(
                ErrorSerializer,
                description="The language model failed (`provider_error`); the user message "
                "is saved: retry with the same Idempotency-Key.",
            ),
        },
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        conversation = conversation_for_user(user=request.user, conversation_id=conversation_id)
        key = idempotency_key(request)
        data = TurnInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        answer = chat_message_answer(
            conversation=conversation, content=data.validated_data["content"], idempotency_key=key
        )
        # A command is always 200, so that a chat client shows the reply; command_code tells
        # how the command went.
        created = not (answer.command or answer.replayed)
        return Response(
            TurnResponseSerializer(answer).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )
