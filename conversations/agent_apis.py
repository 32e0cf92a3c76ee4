"""REST endpoints of the agent's side: search, the context packet, the agent turn, checkpoints."""

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations import retrieval
from conversations.agent_serializers import (
    SearchHitSerializer,
    SearchQuerySerializer,
    SearchResponseSerializer,
)
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
