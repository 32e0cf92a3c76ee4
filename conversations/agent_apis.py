"""REST endpoints of the agent's side: search, the context packet, the agent turn, checkpoints."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations import retrieval
from conversations.agent_serializers import (
    ContextQuerySerializer,
    SearchHitSerializer,
    SearchQuerySerializer,
    SearchResponseSerializer,
    context_payload,
)
from conversations.checkpoint import checkpoint_snapshot
from conversations.context import build_context
from conversations.selectors import conversation_for_user
from facts.selectors import legacy_for_member
from memory_site.drf import service_errors


class LegacySearchApi(APIView):
    @extend_schema(parameters=[SearchQuerySerializer], responses=SearchResponseSerializer)
    def get(self, request: Request, legacy_id: str) -> Response:
        legacy = legacy_for_member(user=request.user, legacy_id=legacy_id)
        with service_errors():
            query, k = retrieval.validate_search_input(
                query=request.query_params.get("q"), k=request.query_params.get("k")
            )
        result = retrieval.search_conversations(user=request.user, legacy=legacy, query=query, k=k)
        return Response(
            {"results": SearchHitSerializer(result.hits, many=True).data, "total": result.total}
        )


class ConversationContextApi(APIView):
    @extend_schema(parameters=[ContextQuerySerializer], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = conversation_for_user(user=request.user, conversation_id=conversation_id)
        query = ContextQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        packet = build_context(conversation=conversation, query=query.validated_data.get("query"))
        return Response(context_payload(packet))


class ConversationCheckpointApi(APIView):
    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = conversation_for_user(user=request.user, conversation_id=conversation_id)
        return Response(checkpoint_snapshot(conversation=conversation))
