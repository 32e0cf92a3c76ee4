"""Writes of the caller's own data across every app: erase everything (DELETE /api/me/data)."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from rest_framework.authtoken.models import Token

from agent_memory import services as agent_memory_services
from conversations import services as conversations_services
from facts import services as facts_services
from memory_site.core import events


def account_erase(*, user: AbstractBaseUser) -> dict[str, int]:
    """Delete every API token of the user (the one of this request too) and clear the
    profile fields; the account row stays with its username and password."""
    with transaction.atomic():
        tokens, _ = Token.objects.filter(user=user).delete()
        get_user_model().objects.filter(pk=user.pk).update(email="", first_name="", last_name="")
    return {"api_tokens": tokens}


def user_data_erase(*, user: AbstractBaseUser) -> dict[str, int]:
    """Erase everything the service stores about `user` in one transaction; a failure in any
    step leaves everything as it was. Returns the number of rows erased (or, for
    `legacies_transferred`, handed on) per kind.

    Conversations go first: a legacy that facts' erase deletes would otherwise take the
    user's conversations with it uncounted, and facts knows nothing of conversations.
    """
    counts: dict[str, int] = {}
    with transaction.atomic():
        # One erase per user at a time, and no memory write of theirs in between.
        get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk").get()
        for step in (
            conversations_services.user_data_erase,
            agent_memory_services.user_data_erase,
            facts_services.user_data_erase,
            account_erase,
        ):
            counts.update(step(user=user))
        # Delivered once this commits; a platform user's row (their external id) is kept.
        events.publish(events.USER_ERASED, user_id=user.pk, data={"erased": counts})
    return counts
