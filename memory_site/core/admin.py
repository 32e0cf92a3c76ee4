"""What every app's admin shares: staff read rows, and change them only through services.

A row's tenancy keys (whose it is, which legacy, which conversation) decide who sees it; an
edit in a change form would write them with the ORM, past every rule of the services. So the
admins built on ServiceOnlyAdmin show every field read-only and add, save and delete nothing;
staff change rows with actions that call a service for each selected row (`service_action`),
each logged in Django's LogEntry as a change made in a form is, by the row's kind and id
(never its text, which an erase must be able to remove).
"""

import json
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from memory_site.core.errors import ApplicationError


class ServiceOnlyAdmin(admin.ModelAdmin):
    """View-only: no add, no change form that saves, no delete. Staff with the model's change
    permission run its actions (`@admin.action(permissions=["service"])`), which call services
    and log."""

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_service_permission(self, request: HttpRequest) -> bool:
        """May run the actions that call services: the model's change permission."""
        return admin.ModelAdmin.has_change_permission(self, request)

    # LogEntry names the row by its kind and id, not by str(row), which holds people's text
    # (a fact's content, a conversation's title): the audit trail outlives an erase.
    def log_change(self, request: HttpRequest, obj: Model, message: Any) -> LogEntry:
        return _log_entry(request, obj, CHANGE, message)

    def log_deletions(self, request: HttpRequest, queryset: QuerySet) -> list[LogEntry]:
        return [_log_entry(request, obj, DELETION, "") for obj in queryset]


def _log_entry(request: HttpRequest, obj: Model, flag: int, message: Any) -> LogEntry:
    return LogEntry.objects.create(
        user_id=request.user.pk,
        content_type=ContentType.objects.get_for_model(obj, for_concrete_model=False),
        object_id=str(obj.pk),
        object_repr=f"{obj._meta.verbose_name} {obj.pk}"[:200],
        action_flag=flag,
        change_message=message if isinstance(message, str) else json.dumps(message),
    )


class ServiceOnlyInline(admin.TabularInline):
    """An inline that shows rows and changes nothing: no add, no change, no delete."""

    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


# The refusals a service raises for one row; the action reports them and goes on.
REFUSALS = (ApplicationError, ValidationError, PermissionDenied)


def _refusal_text(exc: Exception) -> str:
    if isinstance(exc, ApplicationError):
        return exc.message
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return str(exc) or "not allowed"


def service_action(
    model_admin: admin.ModelAdmin,
    request: HttpRequest,
    queryset: QuerySet,
    *,
    service: Callable[[Any], object],
    done: str,
    deletes: bool = False,
) -> int:
    """Run `service(row)` for each selected row, each in a transaction of its own with its
    LogEntry: a change whose message is `done`, or (with `deletes`) a deletion, logged before
    the row goes as Django's own delete action does. A refusal of the service leaves that row
    as it was, unlogged, and is reported to staff. Returns how many rows the service changed."""
    changed, refused = 0, []
    for row in queryset:
        try:
            with transaction.atomic():
                if deletes:
                    model_admin.log_deletions(request, type(row).objects.filter(pk=row.pk))
                service(row)
                if not deletes:
                    model_admin.log_change(request, row, done)
        except REFUSALS as exc:
            refused.append(f"{row}: {_refusal_text(exc)}")
            continue
        changed += 1
    if changed:
        model_admin.message_user(request, f"{done}: {changed}.", messages.SUCCESS)
    for text in refused:
        model_admin.message_user(request, f"Not done for {text}", messages.WARNING)
    return changed
