"""Admin for support staff: conversations, messages, rolling summaries and chunks."""

from django.contrib import admin

from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    fields = ["sequence", "role", "content", "token_count", "created_at"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["__str__", "user", "legacy", "status", "message_count", "turn_count",
                    "last_message_at"]
    list_filter = ["status", "created_at"]
    search_fields = ["id", "title", "user__username", "legacy__name"]
    list_select_related = ["user", "legacy"]
    raw_id_fields = ["user", "legacy"]
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["conversation", "sequence", "role", "token_count", "created_at"]
    list_filter = ["role", "created_at"]
    search_fields = ["content", "conversation__id", "conversation__user__username"]
    raw_id_fields = ["conversation"]
    list_select_related = ["conversation"]


@admin.register(ConversationMemory)
class ConversationMemoryAdmin(admin.ModelAdmin):
    list_display = ["conversation", "start_sequence", "end_sequence", "status",
                    "generation_time_ms", "created_at"]
    list_filter = ["status", "created_at"]
    search_fields = ["conversation__id", "conversation__user__username", "memory_text"]
    raw_id_fields = ["conversation", "base_memory"]
    list_select_related = ["conversation"]


@admin.register(ConversationChunk)
class ConversationChunkAdmin(admin.ModelAdmin):
    list_display = ["conversation", "message_range_start", "message_range_end", "user", "legacy",
                    "created_at"]
    list_filter = ["created_at"]
    search_fields = ["content", "user__username", "legacy__name", "conversation__id"]
    raw_id_fields = ["conversation", "user", "legacy"]
    exclude = ["embedding"]
    list_select_related = ["conversation", "user", "legacy"]
