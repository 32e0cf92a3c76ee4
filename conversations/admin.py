"""Admin for support staff: conversations, messages, rolling summaries and chunks, read-only.

A conversation's user and legacy and a chunk's user, legacy and conversation decide whose
retrieval and context a row reaches, so nothing here is edited in a form
(memory_site.core.admin): staff retry summaries and delete conversations through the services,
and each of those actions is logged.
"""

from datetime import timedelta

from django.conf import settings
from django.contrib import admin, messages
from django.db.models import Q
from django.utils import timezone

from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message
from conversations.services import conversation_delete, summarization
from memory_site.core.admin import ServiceOnlyAdmin, ServiceOnlyInline, service_action


class MessageInline(ServiceOnlyInline):
    model = Message
    fields = ["sequence", "role", "content", "token_count", "created_at"]
    readonly_fields = fields
    show_change_link = True


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
class ConversationAdmin(ServiceOnlyAdmin):
    list_display = ["__str__", "user", "legacy", "status", "message_count", "turn_count",
                    "archive_failures", "last_message_at"]
    list_filter = ["status", ArchiveFailingFilter, "created_at"]
    search_fields = ["id", "title", "user__username", "legacy__name"]
    list_select_related = ["user", "legacy"]
    inlines = [MessageInline]
    actions = ["delete_conversations"]

    @admin.action(description="Delete the selected conversations, as their users would "
                  "(with the facts taken from them)", permissions=["service"])
    def delete_conversations(self, request, queryset):
        service_action(
            self, request, queryset,
            service=lambda conversation: conversation_delete(conversation=conversation),
            done="Conversation deleted", deletes=True,
        )


@admin.register(Message)
class MessageAdmin(ServiceOnlyAdmin):
    """View only: the log is append-only, and summaries, chunks, facts and tool replays refer to
    messages by sequence, so an edit or a deletion here would silently falsify them."""

    list_display = ["conversation", "sequence", "role", "token_count", "created_at"]
    list_filter = ["role", "created_at"]
    search_fields = ["content", "conversation__id", "conversation__user__username"]
    list_select_related = ["conversation"]


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
class ConversationMemoryAdmin(ServiceOnlyAdmin):
    list_display = ["conversation", "start_sequence", "end_sequence", "status",
                    "generation_time_ms", "error", "created_at"]
    list_filter = [NeedsAttentionFilter, "status", "created_at"]
    search_fields = ["conversation__id", "conversation__user__username", "memory_text"]
    list_select_related = ["conversation"]
    actions = ["retry_summaries"]

    @admin.action(description="Retry the selected failed or stuck summaries",
                  permissions=["service"])
    def retry_summaries(self, request, queryset):
        retried = []
        for memory in queryset:
            if summarization.rolling_summary_retry(memory=memory):
                retried.append(memory)
                self.log_change(request, memory, "Summary retried")
        skipped = queryset.count() - len(retried)
        self.message_user(
            request,
            f"Retrying {len(retried)} summaries; {skipped} skipped (completed or still running).",
            messages.SUCCESS if retried else messages.WARNING,
        )


@admin.register(ConversationChunk)
class ConversationChunkAdmin(ServiceOnlyAdmin):
    list_display = ["conversation", "message_range_start", "message_range_end", "user", "legacy",
                    "created_at"]
    list_filter = ["created_at"]
    search_fields = ["content", "user__username", "legacy__name", "conversation__id"]
    exclude = ["embedding"]
    list_select_related = ["conversation", "user", "legacy"]
