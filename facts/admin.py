"""Admin for support staff: legacies, memberships, invitations and facts, read-only.

Who belongs to a family and whose a fact is are the tenancy: staff read them here and change
them only through the services (memory_site.core.admin): a member leaves as if they had left
(facts.services.membership_leave), a fact is deleted as its author would delete it
(facts.services.fact_delete). Nobody is added to a family here: people join by invitation.
"""

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from facts import services
from facts.models import FactConflict, Legacy, LegacyFact, LegacyInvitation, LegacyMembership
from memory_site.core.admin import ServiceOnlyAdmin, ServiceOnlyInline, service_action


class LegacyMembershipInline(ServiceOnlyInline):
    model = LegacyMembership
    fields = ["user", "role", "joined_at"]
    readonly_fields = fields


@admin.register(Legacy)
class LegacyAdmin(ServiceOnlyAdmin):
    list_display = ["name", "created_by", "created_at"]
    search_fields = ["name", "created_by__username", "memberships__user__username"]
    list_filter = ["created_at"]
    inlines = [LegacyMembershipInline]


@admin.register(LegacyMembership)
class LegacyMembershipAdmin(ServiceOnlyAdmin):
    list_display = ["legacy", "user", "role", "joined_at"]
    list_filter = ["role"]
    search_fields = ["legacy__name", "user__username"]
    list_select_related = ["legacy", "user"]
    actions = ["end_memberships"]

    @admin.action(description="End the selected memberships, as if the members left",
                  permissions=["service"])
    def end_memberships(self, request: HttpRequest, queryset: QuerySet) -> None:
        service_action(
            self, request, queryset.select_related("legacy", "user"),
            service=lambda m: services.membership_leave(legacy=m.legacy, user=m.user),
            done="Membership ended (the member left)", deletes=True,
        )


@admin.register(LegacyInvitation)
class LegacyInvitationAdmin(ServiceOnlyAdmin):
    list_display = ["username", "legacy", "role", "status", "invited_by", "created_at"]
    list_filter = ["status", "role"]
    search_fields = ["username", "legacy__name", "invited_by__username"]
    list_select_related = ["legacy", "invited_by"]


@admin.register(LegacyFact)
class LegacyFactAdmin(ServiceOnlyAdmin):
    list_display = ["content", "category", "visibility", "user", "legacy", "extracted_at"]
    list_filter = ["category", "visibility", "extracted_at"]
    search_fields = ["content", "user__username", "legacy__name"]
    list_select_related = ["legacy", "user"]
    date_hierarchy = "extracted_at"
    actions = ["delete_facts"]

    @admin.action(description="Delete the selected facts, as their authors would",
                  permissions=["service"])
    def delete_facts(self, request: HttpRequest, queryset: QuerySet) -> None:
        service_action(
            self, request, queryset.select_related("user"),
            service=lambda fact: services.fact_delete(fact=fact, user=fact.user),
            done="Fact deleted", deletes=True,
        )


@admin.register(FactConflict)
class FactConflictAdmin(ServiceOnlyAdmin):
    list_display = ["attribute", "legacy", "fact_a", "fact_b", "detected_at"]
    list_filter = ["attribute"]
    list_select_related = ["legacy", "fact_a", "fact_b"]
