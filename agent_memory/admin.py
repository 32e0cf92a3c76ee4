"""Admin for support staff: agent memories with their history, and places."""

from django.contrib import admin

from agent_memory.models import AgentMemory, AgentMemoryVersion, Place, PlaceMention


class AgentMemoryVersionInline(admin.TabularInline):
    model = AgentMemoryVersion
    extra = 0
    fields = ["version_number", "content", "source_conversation", "created_at"]
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(AgentMemory)
class AgentMemoryAdmin(admin.ModelAdmin):
    list_display = ["id", "user", "category", "subject", "created_at", "deleted_at"]
    list_filter = ["category", ("deleted_at", admin.EmptyFieldListFilter)]
    search_fields = ["id", "subject", "user__username", "versions__content"]
    readonly_fields = ["id", "user", "category", "subject", "created_at", "deleted_at"]
    inlines = [AgentMemoryVersionInline]
    list_select_related = ["user"]


@admin.register(AgentMemoryVersion)
class AgentMemoryVersionAdmin(admin.ModelAdmin):
    list_display = ["memory", "version_number", "created_at"]
    search_fields = ["memory__id", "content", "memory__user__username"]
    readonly_fields = ["memory", "version_number", "content", "source_conversation", "created_at"]


class PlaceMentionInline(admin.TabularInline):
    model = PlaceMention
    extra = 0
    raw_id_fields = ["conversation", "message"]


@admin.register(Place)
class PlaceAdmin(admin.ModelAdmin):
    list_display = ["name", "place_id", "user", "added_at"]
    search_fields = ["name", "place_id", "user__username"]
    inlines = [PlaceMentionInline]
    raw_id_fields = ["user"]


@admin.register(PlaceMention)
class PlaceMentionAdmin(admin.ModelAdmin):
    list_display = ["place", "conversation", "mentioned_at"]
    raw_id_fields = ["place", "conversation", "message"]
