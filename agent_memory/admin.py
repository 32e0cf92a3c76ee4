"""Admin for support staff: find a user's agent memories with their history, and places (read-only).

Nothing here writes: memories change only through the services (API, tools, dashboard).
"""

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from agent_memory import selectors
from agent_memory.models import AgentMemory, AgentMemoryVersion, Place, PlaceMention


class ReadOnlyAdminMixin:
    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class AgentMemoryVersionInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = AgentMemoryVersion
    extra = 0
    fields = ["version_number", "content", "source_conversation", "source_message", "created_at"]
    readonly_fields = fields
    ordering = ["version_number"]


@admin.register(AgentMemory)
class AgentMemoryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["id", "user", "category", "subject", "current_content", "version",
                    "created_at", "deleted_at", "evicted_at"]
    list_filter = [
        "category",
        ("deleted_at", admin.EmptyFieldListFilter),
        ("evicted_at", admin.EmptyFieldListFilter),
    ]
    search_fields = ["id", "subject", "user__username", "user__email", "versions__content"]
    readonly_fields = ["id", "user", "category", "subject", "created_at", "deleted_at", "evicted_at"]
    inlines = [AgentMemoryVersionInline]
    list_select_related = ["user"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[AgentMemory]:
        # The selectors' annotations: current content and version without a query per row.
        return selectors.annotate_current(super().get_queryset(request))

    @admin.display(description="current content")
    def current_content(self, memory: AgentMemory) -> str:
        return memory.content

    @admin.display(description="version", ordering="version")
    def version(self, memory: AgentMemory) -> int:
        return memory.version


@admin.register(AgentMemoryVersion)
class AgentMemoryVersionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["memory", "version_number", "created_at"]
    search_fields = ["memory__id", "content", "memory__user__username"]
    readonly_fields = ["memory", "version_number", "content", "source_conversation",
                       "source_message", "created_at"]


class PlaceMentionInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = PlaceMention
    extra = 0
    fields = ["conversation", "message", "mentioned_at"]
    readonly_fields = fields


@admin.register(Place)
class PlaceAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["name", "place_id", "user", "added_at"]
    search_fields = ["name", "place_id", "user__username", "user__email"]
    readonly_fields = ["user", "place_id", "name", "notes", "added_at"]
    inlines = [PlaceMentionInline]


@admin.register(PlaceMention)
class PlaceMentionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["place", "conversation", "mentioned_at"]
    readonly_fields = ["place", "conversation", "message", "mentioned_at"]
