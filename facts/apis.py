"""REST endpoints of legacies, their members, and legacy facts (seed 000)."""

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from facts import selectors, services
from facts.serializers import (
    FactCreatedSerializer,
    FactInputSerializer,
    FactListQuerySerializer,
    FactSerializer,
    FactUpdateSerializer,
    FactVisibilitySerializer,
    LegacyInputSerializer,
    LegacySerializer,
    MemberInputSerializer,
    MembershipSerializer,
)
from memory_site.core.api import error_responses, paginate, paginated


class LegacyListCreateApi(APIView):
    pagination_class = paginated("legacies")

    @extend_schema(
        summary="List my legacies",
        description="The legacies I belong to, by name, each with my `role` (owner or member). "
        "A page: `?limit=` and `?offset=`.",
        responses={200: LegacySerializer(many=True), **error_responses(401)},
    )
    def get(self, request: Request) -> Response:
        legacies = selectors.legacies_for_user(request.user).order_by("name", "created_at")
        return paginate(request, legacies, LegacySerializer, "legacies", view=self)

    @extend_schema(
        summary="Create a legacy",
        description="Any signed-in user may create one and becomes its owner. 400 for an empty "
        "or too long `name`.",
        request=LegacyInputSerializer,
        responses={201: LegacySerializer, **error_responses(400, 401)},
    )
    def post(self, request: Request) -> Response:
        data = LegacyInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        legacy = services.legacy_create(user=request.user, **data.validated_data)
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy.pk)
        return Response(LegacySerializer(legacy).data, status=status.HTTP_201_CREATED)


class LegacyMemberCreateApi(APIView):
    @extend_schema(
        summary="Add a member to a legacy",
        description="`{username, role}` (role `member`, the default, or `owner`). Only the "
        "legacy's owner adds members (403 for a member); 400 for an unknown username, 409 "
        "when that user already belongs to the legacy, 404 for a legacy I do not belong to.",
        request=MemberInputSerializer,
        responses={
            201: MembershipSerializer,
            **error_responses(
                400, 401, 403, 404, 409,
                descriptions={403: "Only the legacy's owner adds members.",
                              409: "That user is already a member."},
            ),
        },
    )
    def post(self, request: Request, legacy_id: str) -> Response:
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
        data = MemberInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = services.legacy_member_add(
            legacy=legacy, added_by=request.user, **data.validated_data
        )
        return Response(MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)


class LegacyFactListCreateApi(APIView):
    """My facts about a legacy plus every member's shared ones; add one by hand."""

    pagination_class = paginated("facts")

    @extend_schema(
        summary="List the facts of a legacy",
        description="My facts about the legacy plus every member's shared ones, filtered by "
        "`category`, `visibility`, `mine` and `q` (text). Any member may list; 404 for a "
        "legacy I do not belong to. A page: `?limit=` and `?offset=`.",
        parameters=[FactListQuerySerializer],
        responses={200: FactSerializer(many=True), **error_responses(400, 401, 404)},
    )
    def get(self, request: Request, legacy_id: str) -> Response:
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
        query = FactListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        filters = query.validated_data
        facts = selectors.facts_filtered(
            user=request.user,
            legacy=legacy,
            category=filters.get("category"),
            visibility=filters.get("visibility"),
            mine=filters["mine"],
            text=filters.get("q"),
        )
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(facts, request, view=self)
        data = FactSerializer(page, many=True, context={"request": request}).data
        return paginator.get_paginated_response(data)

    @extend_schema(
        request=FactInputSerializer,
        responses={
            201: FactCreatedSerializer,
            200: FactCreatedSerializer,
            **error_responses(400, 401, 404),
        },
        summary="Add a fact by hand",
        description="Any member adds a fact of their own (`category`, `content`, "
        "`visibility`, private by default). 201 with the new fact; 200 with the existing fact, `duplicate: true` "
        "and a `message` when it duplicates one of mine (nothing is written). 404 for a legacy "
        "I do not belong to.",
    )
    def post(self, request: Request, legacy_id: str) -> Response:
        legacy = selectors.legacy_for_member(user=request.user, legacy_id=legacy_id)
        data = FactInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fact, created = services.fact_create(
            legacy=legacy, user=request.user, **data.validated_data
        )
        body = FactCreatedSerializer(
            fact, context={"request": request, "duplicate": not created}
        ).data
        if not created:
            body["message"] = services.DUPLICATE_MESSAGE
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class FactDetailApi(APIView):
    """Edit or delete one of my facts."""

    @extend_schema(
        summary="Edit one of my facts",
        description="Change a fact's `category` or `content` (its visibility has its own "
        "endpoint). Only its author may (403 for a fellow member's shared fact, 404 for one I "
        "cannot see).",
        request=FactUpdateSerializer,
        responses={200: FactSerializer, **error_responses(400, 401, 403, 404, descriptions={
            403: "Only the fact's author changes it."})},
    )
    def patch(self, request: Request, fact_id: str) -> Response:
        fact = selectors.fact_for_author(user=request.user, fact_id=fact_id)
        data = FactUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fact = services.fact_update(fact=fact, user=request.user, **data.validated_data)
        return Response(FactSerializer(fact, context={"request": request}).data)

    @extend_schema(
        summary="Delete one of my facts",
        description="Only its author may (403 for a fellow member's shared fact, 404 for one I "
        "cannot see).",
        responses={204: None, **error_responses(401, 403, 404, descriptions={
            403: "Only the fact's author deletes it."})},
    )
    def delete(self, request: Request, fact_id: str) -> Response:
        fact = selectors.fact_for_author(user=request.user, fact_id=fact_id)
        services.fact_delete(fact=fact, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class FactVisibilityApi(APIView):
    """Share one of my facts with every member of the legacy, or make it private again."""

    @extend_schema(
        summary="Share or unshare one of my facts",
        description="`{visibility: shared | private}`: a shared fact is seen by every member of "
        "the legacy and marked as shared in the agent's prompt. Only its author may (403 for a "
        "fellow member's shared fact).",
        request=FactVisibilitySerializer,
        responses={200: FactSerializer, **error_responses(400, 401, 403, 404, descriptions={
            403: "Only the fact's author shares it."})},
    )
    def patch(self, request: Request, fact_id: str) -> Response:
        fact = selectors.fact_for_author(user=request.user, fact_id=fact_id)
        data = FactVisibilitySerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fact = services.fact_set_visibility(
            fact=fact, user=request.user, visibility=data.validated_data["visibility"]
        )
        return Response(FactSerializer(fact, context={"request": request}).data)
