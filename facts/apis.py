"""REST endpoints of legacies and their members."""

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from facts import selectors, services
from facts.serializers import (
    LegacyInputSerializer,
    LegacySerializer,
    MemberInputSerializer,
    MembershipSerializer,
)
from memory_site.api import Conflict, paginate, paginated
from memory_site.drf import service_errors


class LegacyListCreateApi(APIView):
    pagination_class = paginated("legacies")

    @extend_schema(responses=LegacySerializer(many=True))
    def get(self, request: Request) -> Response:
        legacies = selectors.legacies_for_user(request.user).order_by("name", "created_at")
        return paginate(request, legacies, LegacySerializer, "legacies", view=self)

    @extend_schema(request=LegacyInputSerializer, responses={201: LegacySerializer})
    def post(self, request: Request) -> Response:
        data = LegacyInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        with service_errors():
            legacy = services.legacy_create(user=request.user, **data.validated_data)
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy.pk)
        return Response(LegacySerializer(legacy).data, status=status.HTTP_201_CREATED)


class LegacyMemberCreateApi(APIView):
    @extend_schema(request=MemberInputSerializer, responses={201: MembershipSerializer})
    def post(self, request: Request, legacy_id: str) -> Response:
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
        data = MemberInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            with service_errors():
                membership = services.legacy_member_add(
                    legacy=legacy, added_by=request.user, **data.validated_data
                )
        except LookupError as exc:
            raise Conflict(str(exc)) from exc
        return Response(MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)
