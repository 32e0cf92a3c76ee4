"""Admin for support staff: conversations, messages, rolling summaries and chunks."""

from datetime import timedelta

from django.conf import settings
from django.contrib import admin, messages
from django.db.models import Q
from django.utils import timezone

from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message
from conversations.services import summarization


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    fields = ["sequence", "role", "content", "token_count", "created_at"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class ArchiveFailingFilter(admin.SimpleListFilter):
    """Conversations whose archive batches keep failing (the sweep is backing off)."""

    title = "archiving"
    parameter_name = "archiving"

    def lookups(self, request, model_admin):
        return [("failing", "Failing")]

    def queryset(self, request, queryset):
        if self.value() == "failing":
            return queryset.filter(archive_failures__gt=0)
        return queryset


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["__str__", "user", "legacy", "status", "message_count", "turn_count",
                    "archive_failures", "last_message_at"]
    list_filter = ["status", ArchiveFailingFilter, "created_at"]
    search_fields = ["id", "title", "user__username", "legacy__name"]
    list_select_related = ["user", "legacy"]
    raw_id_fields = ["user", "legacy"]
    # Counters and pipeline state are the services' to keep; staff read them here.
    readonly_fields = ["message_count", "turn_count", "archive_failures", "archive_failed_at",
                       "archive_error", "last_message_at", "closed_at"]
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    """View only: the log is append-only, and summaries, chunks, facts and tool replays refer to
    messages by sequence, so an edit or a deletion here would silently falsify them."""

    list_display = ["conversation", "sequence", "role", "token_count", "created_at"]
    list_filter = ["role", "created_at"]
    search_fields = ["content", "conversation__id", "conversation__user__username"]
    raw_id_fields = ["conversation"]
    list_select_related = ["conversation"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class NeedsAttentionFilter(admin.SimpleListFilter):
    """Failed rows, and `processing` rows older than MEMORY_PROCESSING_TIMEOUT_SECONDS."""

    title = "needs attention"
    parameter_name = "attention"

    def lookups(self, request, model_admin):
        return [("failed", "Failed"), ("stuck", "Stuck in processing"),
                ("any", "Failed or stuck")]

    def queryset(self, request, queryset):
        cutoff = timezone.now() - timedelta(seconds=settings.MEMORY_PROCESSING_TIMEOUT_SECONDS)
        failed = Q(status=ConversationMemory.Status.FAILED)
        stuck = Q(status=ConversationMemory.Status.PROCESSING, created_at__lt=cutoff)
        conditions = {"failed": failed, "stuck": stuck, "any": failed | stuck}
        if self.value() in conditions:
            return queryset.filter(conditions[self.value()])
        return queryset


@admin.register(ConversationMemory)
class ConversationMemoryAdmin(admin.ModelAdmin):
    list_display = ["conversation", "start_sequence", "end_sequence", "status",
                    "generation_time_ms", "error", "created_at"]
    list_filter = [NeedsAttentionFilter, "status", "created_at"]
    search_fields = ["conversation__id", "conversation__user__username", "memory_text"]
    raw_id_fields = ["conversation", "base_memory"]
    list_select_related = ["conversation"]
    actions = ["retry_summaries"]

    @admin.action(description="Retry the selected failed or stuck summaries")
    def retry_summaries(self, request, queryset):
        retried = sum(summarization.rolling_summary_retry(memory=memory) for memory in queryset)
        skipped = queryset.count() - retried
        self.message_user(
            request,
            f"Retrying {retried} summaries; {skipped} skipped (completed or still running).",
            messages.SUCCESS if retried else messages.WARNING,
        )


@admin.register(ConversationChunk)
class ConversationChunkAdmin(admin.ModelAdmin):
    list_display = ["conversation", "message_range_start", "message_range_end", "user", "legacy",
                    "created_at"]
    list_filter = ["created_at"]
    search_fields = ["content", "user__username", "legacy__name", "conversation__id"]
    raw_id_fields = ["conversation", "user", "legacy"]
    exclude = ["embedding"]
    list_select_related = ["conversation", "user", "legacy"]
