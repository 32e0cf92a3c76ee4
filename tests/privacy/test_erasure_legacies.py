"""One user's erase never takes another user's rows: a legacy left with no member stays while
people removed from it earlier still have facts or conversations there, and goes with the erase
of the last of them."""

import pytest

from conversations.models import Conversation
from facts.models import Legacy, LegacyFact, LegacyMembership
from facts.services import membership_remove
from tests.conftest import api_client_for
from tests.factories import LegacyFactFactory
from tests.support.world import conversation_with_messages

pytestmark = pytest.mark.django_db


@pytest.fixture
def removed(family):
    """The member's rows in the family's legacy, then the owner removes them: their fact
    becomes private and stays theirs, their conversation stays theirs."""
    member = family.member
    fact = LegacyFactFactory(legacy=family.legacy, user=member, content="Rose sang alto.",
                             visibility="shared")
    conversation = conversation_with_messages(legacy=family.legacy, user=member,
                                              contents=["Rose sang in the choir."])
    membership_remove(legacy=family.legacy, removed_by=family.owner, username=member.username)
    assert not LegacyMembership.objects.filter(legacy=family.legacy, user=member).exists()
    return fact, conversation


def test_the_last_members_erase_keeps_a_legacy_that_holds_a_removed_members_rows(
    family, removed
):
    fact, conversation = removed
    conversation_with_messages(legacy=family.legacy, user=family.owner, contents=["Hello."])

    response = api_client_for(family.owner).delete("/api/me/data")

    assert response.status_code == 200
    erased = response.json()["erased"]
    assert (erased["legacies_deleted"], erased["legacies_kept"], erased["memberships"]) == (0, 1, 1)
    family.legacy.refresh_from_db()
    # No member; created_by (PROTECT) passed to the one whose rows keep the legacy.
    assert family.legacy.created_by == family.member
    assert not LegacyMembership.objects.filter(legacy=family.legacy).exists()
    fact.refresh_from_db()
    assert (fact.user, fact.legacy_id, fact.content, fact.visibility) == (
        family.member, family.legacy.pk, "Rose sang alto.", "private")
    assert list(conversation.messages.values_list("content", flat=True)) == [
        "Rose sang in the choir."]
    assert not Conversation.objects.filter(user=family.owner).exists()
    # Nothing points at the erased account: support can delete it.
    family.owner.delete()


def test_a_removed_members_conversation_alone_keeps_the_legacy(family):
    member = family.member
    conversation = conversation_with_messages(legacy=family.legacy, user=member,
                                              contents=["Only a chat, no fact."])
    membership_remove(legacy=family.legacy, removed_by=family.owner, username=member.username)

    response = api_client_for(family.owner).delete("/api/me/data")

    assert response.status_code == 200
    assert response.json()["erased"]["legacies_kept"] == 1
    assert Legacy.objects.filter(pk=family.legacy.pk, created_by=member).exists()
    assert Conversation.objects.filter(pk=conversation.pk, user=member).exists()


def test_the_erase_of_the_last_one_with_rows_deletes_the_kept_legacy(family, removed):
    api_client_for(family.owner).delete("/api/me/data")
    assert Legacy.objects.filter(pk=family.legacy.pk).exists()

    response = api_client_for(family.member).delete("/api/me/data")

    assert response.status_code == 200
    erased = response.json()["erased"]
    assert (erased["legacies_deleted"], erased["legacies_kept"], erased["facts"],
            erased["conversations"]) == (1, 0, 1, 1)
    assert not Legacy.objects.filter(pk=family.legacy.pk).exists()
    # The other family was never touched.
    assert Legacy.objects.filter(pk=family.other_legacy.pk).exists()


def test_a_removed_member_erasing_leaves_the_family_as_it_is(family, removed):
    before = (set(LegacyMembership.objects.values_list("legacy_id", "user_id", "role")),
              set(Legacy.objects.values_list("pk", "created_by_id")))

    response = api_client_for(family.member).delete("/api/me/data")

    assert response.status_code == 200
    assert response.json()["erased"]["legacies_deleted"] == 0
    assert response.json()["erased"]["legacies_kept"] == 0
    assert (set(LegacyMembership.objects.values_list("legacy_id", "user_id", "role")),
            set(Legacy.objects.values_list("pk", "created_by_id"))) == before
    assert not LegacyFact.objects.filter(user=family.member).exists()
