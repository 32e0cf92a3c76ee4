"""Template context of every dashboard page: the count of my pending invitations (the nav)."""

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from facts.selectors import invitations_pending_for


def pending_invitations(request: HttpRequest) -> dict:
    """`pending_invitation_count`, counted only when a template uses it."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        "pending_invitation_count": SimpleLazyObject(
            lambda: invitations_pending_for(user).count()
        )
    }
