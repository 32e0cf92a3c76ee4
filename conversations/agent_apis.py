"""REST endpoints of the agent's side: search, the context packet, the agent turn, checkpoints."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agent_memory.commands import command_run, is_memory_command
from conversations import retrieval
from conversations.agent_serializers import (
    CheckpointResponseSerializer,
    ContextQuerySerializer,
    ContextResponseSerializer,
    SearchHitSerializer,
    SearchQuerySerializer,
    SearchResponseSerializer,
    TurnInputSerializer,
    TurnResponseSerializer,
    command_turn_payload,
    context_payload,
    turn_payload,
)
from conversations.apis import IDEMPOTENCY_HEADER, idempotency_key
from conversations.checkpoint import checkpoint_snapshot
from conversations.context import build_context
from conversations.selectors import conversation_for_user, idempotency_key_used
from conversations.services.turn import TurnConflict, TurnInProgress, TurnProviderError, turn_run
from facts.selectors import legacy_for_member
from memory_site.core.api import Conflict, ErrorSerializer, error_responses
from memory_site.core.drf import service_errors


class LegacySearchApi(APIView):
    @extend_schema(
        summary="Search my earlier conversations about a legacy",
        description="Exact hybrid search (pgvector + full text, reciprocal rank fusion, "
        "recency and open-loop priority) over my archived chunks and not yet archived user "
        "messages: at most `k` `results`, `total` units in scope, `warnings`. Any member, over "
        "their own conversations only; 400 for an empty or too long `q` or a `k` out of range, "
        "404 for a legacy I do not belong to.",
        parameters=[SearchQuerySerializer],
        responses={200: SearchResponseSerializer, **error_responses(400, 401, 404)},
    )
    def get(self, request: Request, legacy_id: str) -> Response:
        legacy = legacy_for_member(user=request.user, legacy_id=legacy_id)
        with service_errors():
            query, k = retrieval.validate_search_input(
                query=request.query_params.get("q"), k=request.query_params.get("k")
            )
        result = retrieval.search_conversations(user=request.user, legacy=legacy, query=query, k=k)
        return Response(
            {
                "results": SearchHitSerializer(result.hits, many=True).data,
                "total": result.total,
                "warnings": result.warnings,
            }
        )


class ConversationContextApi(APIView):
    @extend_schema(
        summary="The context for the next LLM call",
        description="Seed 004's context packet: `system_prompt` and `messages` ready for an "
        "OpenAI chat call, in a cache-friendly order and within CONTEXT_TOKEN_BUDGET, with "
        "`parts`, `token_counts`, `cuts` and `warnings`. `?query=` sets what earlier "
        "conversations are searched for (default: the latest user message). Only the "
        "conversation's user (404 otherwise).",
        parameters=[ContextQuerySerializer],
        responses={200: ContextResponseSerializer, **error_responses(400, 401, 404)},
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = conversation_for_user(user=request.user, conversation_id=conversation_id)
        query = ContextQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        packet = build_context(conversation=conversation, query=query.validated_data.get("query"))
        return Response(context_payload(packet))


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
        return Response(checkpoint_snapshot(conversation=conversation))


class ProviderFailed(APIException):
    status_code = status.HTTP_502_BAD_GATEWAY
    default_code = "provider_error"


class ConversationTurnApi(APIView):
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
                400, 401, 404, 409,
                descriptions={409: "The Idempotency-Key was used for another message "
                              "(`conflict`), or a request with it is still running the turn "
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
        content = data.validated_data["content"]
        if is_memory_command(content):
            # Seed 003: /memory is handled directly, without the agent. Always 200, so that
            # a chat client shows the reply; command_code tells how the command went. A
            # command is not recorded, so a key cannot replay it; a key that already names a
            # message is a client bug, answered as for any other content.
            if key and idempotency_key_used(conversation=conversation, key=key):
                raise Conflict("This Idempotency-Key was already used for another message.")
            answer = command_run(user=request.user, text=content)
            return Response(command_turn_payload(answer))
        try:
            with service_errors():
                result = turn_run(
                    conversation=conversation,
                    content=content,
                    idempotency_key=key,
                )
        except TurnConflict as exc:
            raise Conflict(str(exc)) from exc
        except TurnInProgress as exc:
            raise Conflict(str(exc), code="turn_in_progress") from exc
        except TurnProviderError as exc:
            raise ProviderFailed(
                f"The language model failed: {exc}. Your message was saved as "
                f"#{exc.user_message.sequence}; send the same request with the same "
                "Idempotency-Key to retry without saving it twice."
            ) from exc
        return Response(
            turn_payload(result),
            status=status.HTTP_200_OK if result.replayed else status.HTTP_201_CREATED,
        )
