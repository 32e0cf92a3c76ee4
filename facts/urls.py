"""Dashboard routes of the facts app."""

from django.urls import path

from facts import views

app_name = "facts"

urlpatterns = [
    path("", views.legacy_list, name="legacy_list"),
    path("legacies/new", views.legacy_create, name="legacy_create"),
    path("legacies/<uuid:legacy_id>", views.legacy_detail, name="legacy_detail"),
    path("legacies/<uuid:legacy_id>/leave", views.legacy_leave, name="legacy_leave"),
    path("legacies/<uuid:legacy_id>/invite", views.legacy_invite, name="legacy_invite"),
    path(
        "legacies/<uuid:legacy_id>/invitations/<uuid:invitation_id>/withdraw",
        views.legacy_invitation_withdraw,
        name="legacy_invitation_withdraw",
    ),
    path("invitations", views.invitations, name="invitations"),
    path(
        "invitations/<uuid:invitation_id>/answer",
        views.invitation_answer,
        name="invitation_answer",
    ),
    path("legacies/<uuid:legacy_id>/facts", views.legacy_facts, name="legacy_facts"),
    path("legacies/<uuid:legacy_id>/facts/add", views.fact_add, name="fact_add"),
    path("facts/<uuid:fact_id>", views.fact_row, name="fact_row"),
    path("facts/<uuid:fact_id>/visibility", views.fact_visibility, name="fact_visibility"),
    path("facts/<uuid:fact_id>/edit", views.fact_edit, name="fact_edit"),
    path("facts/<uuid:fact_id>/delete", views.fact_delete, name="fact_delete"),
    path(
        "facts/<uuid:fact_id>/undo-correction",
        views.fact_undo_correction,
        name="fact_undo_correction",
    ),
]
