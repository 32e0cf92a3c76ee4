"""API routes of the facts app (paths relative to /api/)."""

from django.urls import path

from facts import apis

urlpatterns = [
    path("legacies", apis.LegacyListCreateApi.as_view(), name="api-legacies"),
    path(
        "legacies/<uuid:legacy_id>/members",
        apis.LegacyMemberListCreateApi.as_view(),
        name="api-legacy-members",
    ),
    # Before members/<username>: "me" is the caller; no account of that name joins a family
    # (facts.services.ME_REFUSED), so no owner ever needs it to remove one.
    path(
        "legacies/<uuid:legacy_id>/members/me",
        apis.LegacyMemberLeaveApi.as_view(),
        name="api-legacy-member-leave",
    ),
    path(
        # <path:>: a platform's external id may hold a '/' (team/ann).
        "legacies/<uuid:legacy_id>/members/<path:username>",
        apis.LegacyMemberDetailApi.as_view(),
        name="api-legacy-member",
    ),
    path(
        "legacies/<uuid:legacy_id>/invitations",
        apis.LegacyInvitationListCreateApi.as_view(),
        name="api-legacy-invitations",
    ),
    path(
        "legacies/<uuid:legacy_id>/invitations/<uuid:invitation_id>",
        apis.LegacyInvitationDetailApi.as_view(),
        name="api-legacy-invitation",
    ),
    path("invitations", apis.InvitationListApi.as_view(), name="api-invitations"),
    path(
        "invitations/<uuid:invitation_id>/accept",
        apis.InvitationAcceptApi.as_view(),
        name="api-invitation-accept",
    ),
    path(
        "invitations/<uuid:invitation_id>/decline",
        apis.InvitationDeclineApi.as_view(),
        name="api-invitation-decline",
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
    path(
        "ai/facts/<uuid:fact_id>/undo-correction",
        apis.FactCorrectionUndoApi.as_view(),
        name="api-fact-undo-correction",
    ),
    path(
        "ai/legacies/<uuid:legacy_id>/fact-conflicts",
        apis.LegacyFactConflictListApi.as_view(),
        name="api-legacy-fact-conflicts",
    ),
]
