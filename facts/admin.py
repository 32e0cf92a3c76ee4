"""Admin for support staff: legacies, memberships, invitations and facts."""

from django.contrib import admin

from facts.models import Legacy, LegacyFact, LegacyInvitation, LegacyMembership


class LegacyMembershipInline(admin.TabularInline):
    model = LegacyMembership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Legacy)
class LegacyAdmin(admin.ModelAdmin):
    list_display = ["name", "created_by", "created_at"]
    search_fields = ["name", "created_by__username", "memberships__user__username"]
    list_filter = ["created_at"]
    inlines = [LegacyMembershipInline]
    autocomplete_fields = ["created_by"]


@admin.register(LegacyMembership)
class LegacyMembershipAdmin(admin.ModelAdmin):
    list_display = ["legacy", "user", "role", "joined_at"]
    list_filter = ["role"]
    search_fields = ["legacy__name", "user__username"]
    list_select_related = ["legacy", "user"]


@admin.register(LegacyInvitation)
class LegacyInvitationAdmin(admin.ModelAdmin):
    list_display = ["username", "legacy", "role", "status", "invited_by", "created_at"]
    list_filter = ["status", "role"]
    search_fields = ["username", "legacy__name", "invited_by__username"]
    list_select_related = ["legacy", "invited_by"]
    raw_id_fields = ["invited_user", "invited_by"]


@admin.register(LegacyFact)
class LegacyFactAdmin(admin.ModelAdmin):
    list_display = ["content", "category", "visibility", "user", "legacy", "extracted_at"]
    list_filter = ["category", "visibility", "extracted_at"]
    search_fields = ["content", "user__username", "legacy__name"]
    list_select_related = ["legacy", "user"]
    raw_id_fields = ["source_conversation"]
    date_hierarchy = "extracted_at"
