"""API routes of the facts app (paths relative to /api/)."""

from django.urls import path

from facts import apis

urlpatterns = [
    path("legacies", apis.LegacyListCreateApi.as_view(), name="api-legacies"),
    path(
        "legacies/<uuid:legacy_id>/members",
        apis.LegacyMemberCreateApi.as_view(),
        name="api-legacy-members",
    ),
    path(
        "ai/legacies/<uuid:legacy_id>/facts",
        apis.LegacyFactListCreateApi.as_view(),
        name="api-legacy-facts",
    ),
    path("ai/facts/<uuid:fact_id>", apis.FactDetailApi.as_view(), name="api-fact-detail"),
    path(
        "ai/facts/<uuid:fact_id>/visibility",
        apis.FactVisibilityApi.as_view(),
        name="api-fact-visibility",
    ),
]
