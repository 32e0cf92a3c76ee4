"""Writes of the caller's own data across every app: erase everything (DELETE /api/me/data)."""

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from django_q.models import Failure
from rest_framework.authtoken.models import Token

from agent_memory import services as agent_memory_services
from conversations import services as conversations_services
from conversations.models import Conversation
from facts import services as facts_services
from memory_site.core import events
from memory_site.core.errors import database_busy
from memory_site.privacy import traces

logger = logging.getLogger(__name__)


def account_erase(*, user: AbstractBaseUser) -> dict[str, int]:
    """Delete every API token of the user (the one of this request too) and clear the
    profile fields; the account row stays with its username and password."""
    with transaction.atomic():
        tokens, _ = Token.objects.filter(user=user).delete()
        get_user_model().objects.filter(pk=user.pk).update(email="", first_name="", last_name="")
    return {"api_tokens": tokens}


# An erase that lost a race with another transaction (a deadlock PostgreSQL broke by rolling the
# erase back) runs again, at most this many times in all: the other write has committed by
# then, and the erase takes what it wrote too.
ERASE_ATTEMPTS = 3


def user_data_erase(*, user: AbstractBaseUser) -> dict[str, int]:
    """Erase everything the service stores about `user` in one transaction; a failure in any
    step leaves everything as it was. Returns the number of rows erased (or, for
    `legacies_transferred` and `legacies_kept`, handed on or left to others) per kind.

    A write of the user's that comes meanwhile waits for the erase (the account's row is the
    first lock of both: memory_site.core.locks.hold_user), or the erase waits for it and takes
    what it wrote; a deadlock that is left (a family write of another member's, say) rolls the
    erase back and it runs again (ERASE_ATTEMPTS), unless the caller's transaction holds it.
    """
    for attempt in range(1, ERASE_ATTEMPTS + 1):
        try:
            return _erase(user)
        except DatabaseError as exc:
            if not database_busy(exc) or attempt == ERASE_ATTEMPTS or (
                    connection.in_atomic_block):
                raise
            logger.warning("erase of user %s lost a database race (attempt %d of %d); again",
                           user.pk, attempt, ERASE_ATTEMPTS)
            time.sleep(0.05 * attempt)
    raise AssertionError("unreachable")


def _erase(user: AbstractBaseUser) -> dict[str, int]:
    """One attempt of user_data_erase.

    Conversations go first: a legacy that facts' erase deletes would otherwise take the
    user's conversations with it uncounted, and facts knows nothing of conversations (it is
    told in which legacies they were). Then what the user left outside the apps' tables
    (privacy.traces): sessions, job-queue rows, webhook deliveries, login records.
    """
    counts: dict[str, int] = {}
    with transaction.atomic():
        # One erase per user at a time, and no memory write of theirs in between.
        get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk").get()
        conversations = list(Conversation.objects.filter(user=user).values_list("pk", "legacy_id"))
        theirs = traces.user_traces(user=user, conversation_ids=[pk for pk, _ in conversations])
        counts.update(conversations_services.user_data_erase(user=user))
        counts.update(agent_memory_services.user_data_erase(user=user))
        counts.update(facts_services.user_data_erase(
            user=user, legacies_with_rows={legacy_id for _, legacy_id in conversations}
        ))
        counts.update(account_erase(user=user))
        counts["sessions"] = traces.sessions_erase(user=user)
        counts["jobs"] = traces.jobs_erase(traces=theirs)
        counts["webhook_deliveries"] = traces.webhook_deliveries_erase(traces=theirs)
        counts["login_records"] = traces.login_records_erase(user=user)
        # Delivered once this commits; a platform user's row (their external id) is kept.
        events.publish(events.USER_ERASED, user_id=user.pk, data={"erased": counts})
    return counts


def failed_jobs_prune() -> int:
    """Delete the failed jobs that stopped more than Q_FAILURE_RETENTION_DAYS ago. django-q2's
    save_limit prunes only successes, and a failure's arguments and error text name
    conversations and can echo a provider's words about them. Returns how many went."""
    cutoff = timezone.now() - timedelta(days=settings.Q_FAILURE_RETENTION_DAYS)
    with transaction.atomic():
        deleted, _ = Failure.objects.filter(stopped__lt=cutoff).delete()
    return deleted
