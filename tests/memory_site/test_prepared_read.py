"""memory_site.core.sql.PreparedRead: an ORM read compiled once per process and run as a
statement prepared on the server, with the rows its queryset would give."""

import itertools
import re
from uuid import UUID

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversations.models import Conversation
from conversations.selectors import conversation_for_user, conversations_for_user
from facts.models import LegacyMembership
from memory_site.core.errors import NotFound
from memory_site.core.sql import PreparedRead, user_and_id_samples
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db


def _orm(user, conversation_id):  # noqa: ANN001, ANN202
    return list(conversations_for_user(user).filter(pk=conversation_id))


def test_the_conversation_read_gives_what_its_queryset_gives(family):
    mine = ConversationFactory(user=family.owner, legacy=family.legacy)
    theirs = ConversationFactory(user=family.member, legacy=family.legacy)
    for user, conversation in [(family.owner, mine), (family.member, theirs),
                               (family.owner, theirs), (family.member, mine),
                               (family.stranger, mine), (family.other_member, theirs)]:
        expected = _orm(user, conversation.pk)
        if expected:
            read = conversation_for_user(user=user, conversation_id=str(conversation.pk))
            assert read == conversation
            with CaptureQueriesContext(connection) as queries:
                assert read.legacy.name == family.legacy.name  # read with it
            assert not queries.captured_queries
        else:
            with pytest.raises(NotFound):
                conversation_for_user(user=user, conversation_id=conversation.pk)
    # A member who left the legacy no longer reads their conversations in it.
    LegacyMembership.objects.filter(user=family.member, legacy=family.legacy).delete()
    assert _orm(family.member, theirs.pk) == []
    with pytest.raises(NotFound):
        conversation_for_user(user=family.member, conversation_id=theirs.pk)
    for bad in ("not-a-uuid", "", None, 12.5):
        with pytest.raises(NotFound):
            conversation_for_user(user=family.owner, conversation_id=bad)
    with pytest.raises(NotFound):
        conversation_for_user(user=AnonymousUser(), conversation_id=mine.pk)


def test_the_read_is_prepared_on_the_server_and_compiled_once(family):
    mine = ConversationFactory(user=family.owner, legacy=family.legacy)
    read = PreparedRead(
        lambda user, pk: conversations_for_user(user).filter(pk=pk).order_by()[:1],
        samples=user_and_id_samples,
    )
    assert read(family.owner, mine.pk) == [mine]
    compiled = read._compiled
    assert read(family.member, mine.pk) == []
    assert read._compiled is compiled
    numbers = itertools.count(1)  # psycopg sends %s as $1, $2, …
    statement = re.sub("%s", lambda _: f"${next(numbers)}", compiled.sql)
    with connection.cursor() as cursor:
        cursor.execute("SELECT generic_plans FROM pg_prepared_statements WHERE statement = %s",
                       [statement])
        assert cursor.fetchall() == [(2,)]


def test_a_queryset_with_parameters_other_than_the_samples_is_refused(family):
    read = PreparedRead(
        lambda pk: Conversation.objects.filter(pk=pk, status=Conversation.Status.ACTIVE),
        samples=lambda: (UUID(int=1),),
    )
    with pytest.raises(ImproperlyConfigured, match="not one of the sample arguments"):
        read(UUID(int=2))


def test_the_legacy_read_gives_its_annotation_and_creator_and_no_other_familys(family):
    from facts.selectors import legacies_for_user, legacy_for_member

    for user in (family.owner, family.member, family.stranger, family.other_member):
        expected = list(legacies_for_user(user).filter(pk=family.legacy.pk))
        if not expected:
            with pytest.raises(NotFound):
                legacy_for_member(user=user, legacy_id=family.legacy.pk)
            continue
        read = legacy_for_member(user=user, legacy_id=str(family.legacy.pk))
        assert (read, read.my_role) == (expected[0], expected[0].my_role)
        with CaptureQueriesContext(connection) as queries:
            assert read.created_by == expected[0].created_by  # read with it
        assert not queries.captured_queries
    roles = {legacy_for_member(user=u, legacy_id=family.legacy.pk).my_role
             for u in (family.owner, family.member)}
    assert roles == {LegacyMembership.Role.OWNER, LegacyMembership.Role.MEMBER}
    for bad in ("not-a-uuid", None, UUID(int=5)):
        with pytest.raises(NotFound):
            legacy_for_member(user=family.owner, legacy_id=bad)
