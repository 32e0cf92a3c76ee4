"""The platform's own endpoints (the key alone, no X-User-Id): provisioning one of its users,
and its webhook endpoints."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory_site.core.api import error_responses, paginate, paginated
from memory_site.platforms.permissions import IsPlatform
from memory_site.platforms.selectors import (
    webhook_endpoint_for_platform,
    webhook_endpoints_for_platform,
)
from memory_site.platforms.serializers import (
    PlatformUserInputSerializer,
    PlatformUserSerializer,
    WebhookEndpointCreatedSerializer,
    WebhookEndpointInputSerializer,
    WebhookEndpointSerializer,
)
from memory_site.platforms.services import (
    platform_user_get_or_create,
    webhook_endpoint_create,
    webhook_endpoint_delete,
)


class PlatformUserProvisionApi(APIView):
    permission_classes = [IsPlatform]

    @extend_schema(
        summary="Provision a platform user",
        description="With a platform key and no X-User-Id: the user with this `external_id` "
        "of the key's platform, created if new (201) or as it was (200). Every other call of a "
        "platform names its user in X-User-Id, which creates them on first use just the same. "
        "403 for a user's token or session.",
        request=PlatformUserInputSerializer,
        responses={
            201: OpenApiResponse(PlatformUserSerializer, description="Created."),
            200: OpenApiResponse(PlatformUserSerializer, description="Already there."),
            **error_responses(
                400, 401, 403,
                descriptions={403: "Not a platform key: a user's token or session."},
            ),
        },
        auth=[{"platformKey": []}],
    )
    def post(self, request: Request) -> Response:
        data = PlatformUserInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        platform_user, created = platform_user_get_or_create(
            platform=request.auth.platform, external_id=data.validated_data["external_id"]
        )
        return Response(
            PlatformUserSerializer(platform_user).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


NOT_A_PLATFORM = {403: "Not a platform key: a user's token or session."}


class WebhookEndpointListCreateApi(APIView):
    permission_classes = [IsPlatform]
    pagination_class = paginated("webhooks")

    @extend_schema(
        summary="List my webhook endpoints",
        description="The key's platform's webhook endpoints, oldest first, without their "
        "secrets. Every event of one of its users is delivered to each active one "
        "(docs/webhooks.md). A page: `?limit=` and `?offset=`.",
        responses={
            200: WebhookEndpointSerializer(many=True),
            **error_responses(401, 403, descriptions=NOT_A_PLATFORM),
        },
        auth=[{"platformKey": []}],
    )
    def get(self, request: Request) -> Response:
        endpoints = webhook_endpoints_for_platform(request.auth.platform)
        return paginate(request, endpoints, WebhookEndpointSerializer, "webhooks", view=self)

    @extend_schema(
        summary="Register a webhook endpoint",
        description="With a platform key and no X-User-Id: register `url` for the signed events "
        "of the platform's users (`facts.extracted`, `fact.superseded`, `summary.completed`, "
        "`conversation.archived`, `user.erased`). The answer holds the signing `secret`, shown "
        "this once. 400 for a URL that is not http(s), has credentials or a port outside 1 to "
        "65535, does not resolve or resolves to a private, loopback, link-local or reserved "
        "address (an IPv6 address is judged by the IPv4 address it embeds, too).",
        request=WebhookEndpointInputSerializer,
        responses={
            201: OpenApiResponse(
                WebhookEndpointCreatedSerializer, description="Registered; the secret is shown once."
            ),
            **error_responses(400, 401, 403, descriptions=NOT_A_PLATFORM),
        },
        auth=[{"platformKey": []}],
    )
    def post(self, request: Request) -> Response:
        data = WebhookEndpointInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        endpoint = webhook_endpoint_create(
            platform=request.auth.platform, url=data.validated_data["url"]
        )
        return Response(
            WebhookEndpointCreatedSerializer(endpoint).data, status=status.HTTP_201_CREATED
        )


class WebhookEndpointDetailApi(APIView):
    permission_classes = [IsPlatform]

    @extend_schema(
        summary="Remove a webhook endpoint",
        description="Removes one of the key's platform's webhook endpoints with its deliveries; "
        "pending deliveries are not attempted again. Another platform's endpoint is a 404.",
        request=None,
        responses={
            204: OpenApiResponse(description="Removed."),
            **error_responses(401, 403, 404, descriptions=NOT_A_PLATFORM),
        },
        auth=[{"platformKey": []}],
    )
    def delete(self, request: Request, endpoint_id: int) -> Response:
        endpoint = webhook_endpoint_for_platform(
            platform=request.auth.platform, endpoint_id=endpoint_id
        )
        webhook_endpoint_delete(endpoint=endpoint)
        return Response(status=status.HTTP_204_NO_CONTENT)
