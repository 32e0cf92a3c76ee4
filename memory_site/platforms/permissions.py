"""Who may call what: a platform alone (its key without X-User-Id) provisions, and only that."""

from rest_framework import permissions
from rest_framework.request import Request

from memory_site.platforms.models import PlatformKey


class IsAuthenticated(permissions.IsAuthenticated):
    """The default of every API view. A platform's key without X-User-Id is authenticated but
    acts for nobody: it is told what is missing instead of DRF's generic refusal."""

    message = (
        "A platform key acts for one of its users here: send the user's external id in X-User-Id."
    )
    code = "user_id_required"


class IsPlatform(permissions.BasePermission):
    """The caller is a platform's key, with or without X-User-Id."""

    message = "Only a platform key may call this."

    def has_permission(self, request: Request, view) -> bool:
        return isinstance(request.auth, PlatformKey)
