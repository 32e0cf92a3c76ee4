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
]
