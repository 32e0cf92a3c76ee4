"""DELETE /api/me/data: the caller's rows go, in one transaction; everyone else's stay."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from agent_memory.models import AgentMemory, AgentMemoryVersion, Place, PlaceMention
from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message
from facts.models import Legacy, LegacyFact, LegacyMembership
from memory_site.privacy import serializers as privacy_serializers
from memory_site.privacy import services as privacy_services
from tests.conftest import api_client_for
from tests.factories import LegacyFactFactory, LegacyFactory, MembershipFactory, UserFactory
from tests.support.world import build_world, conversation_with_messages, rows_by_model, whole_state

pytestmark = pytest.mark.django_db

ZERO = dict.fromkeys(privacy_serializers.ErasedCountsSerializer().fields, 0)


def owned_by(user) -> dict[str, set[str]]:
    """The primary keys of the rows that belong to `user`, per model."""
    queries = {
        LegacyMembership: LegacyMembership.objects.filter(user=user),
        LegacyFact: LegacyFact.objects.filter(user=user),
        Conversation: Conversation.objects.filter(user=user),
        Message: Message.objects.filter(conversation__user=user),
        ConversationMemory: ConversationMemory.objects.filter(conversation__user=user),
        ConversationChunk: ConversationChunk.objects.filter(user=user),
        AgentMemory: AgentMemory.objects.filter(user=user),
        AgentMemoryVersion: AgentMemoryVersion.objects.filter(memory__user=user),
        Place: Place.objects.filter(user=user),
        PlaceMention: PlaceMention.objects.filter(place__user=user),
    }
    return {
        model._meta.label: {str(pk) for pk in qs.values_list("pk", flat=True)}
        for model, qs in queries.items()
    }


@pytest.fixture
def world(family):
    return build_world(family)


def test_erase_removes_exactly_the_callers_rows_and_answers_the_counts(world):
    family = world.family
    # A legacy only the owner belongs to, with a conversation and a fact in it.
    solo = LegacyFactory(name="Uncle Tom", created_by=family.owner)
    conversation_with_messages(legacy=solo, user=family.owner, contents=["Tom fished."])
    LegacyFactFactory(legacy=solo, user=family.owner, content="Tom loved fishing.")
    client = api_client_for(family.owner)
    mine = owned_by(family.owner)
    before = rows_by_model()

    response = client.delete("/api/me/data")

    assert response.status_code == 200, response.content
    assert response.json() == {
        "erased": {
            "conversations": 2,
            "messages": 4,
            "summaries": 1,
            "chunks": 1,
            "agent_memories": 2,
            "memory_versions": 3,
            "places": 1,
            "place_mentions": 1,
            "facts": 3,
            "memberships": 2,
            "legacies_deleted": 1,
            "legacies_transferred": 1,
            "legacies_kept": 0,
            "api_tokens": 1,
            "sessions": 0,
            "jobs": 0,
            "webhook_deliveries": 0,
            "login_records": 0,
        },
        "account_kept": "owner",
    }
    after = rows_by_model()
    for label, rows in before.items():
        expected = rows - mine.get(label, set())
        if label == Legacy._meta.label:
            expected = rows - {str(solo.pk)}
        assert after[label] == expected, label
    assert all(not rows for rows in owned_by(family.owner).values())
    # The fellow member's shared fact and conversation are untouched, and so is the other family.
    world.member_shared_fact.refresh_from_db()
    assert world.member_shared_fact.visibility == "shared"
    assert Conversation.objects.filter(user=family.member).count() == 1
    assert Legacy.objects.filter(pk=family.other_legacy.pk).exists()


def test_the_account_is_kept_with_its_username_only(world):
    owner = world.family.owner
    type(owner).objects.filter(pk=owner.pk).update(
        email="ann@example.org", first_name="Ann", last_name="Whitfield"
    )
    api_client_for(owner).delete("/api/me/data")
    owner.refresh_from_db()
    assert (owner.username, owner.email, owner.first_name, owner.last_name) == ("owner", "", "", "")
    assert owner.is_active
    assert owner.check_password("pw-for-tests")


def test_ownership_passes_to_the_longest_standing_other_member(world):
    family = world.family
    newer = UserFactory(username="newer")
    MembershipFactory(legacy=family.legacy, user=newer)
    LegacyMembership.objects.filter(user=newer).update(joined_at=timezone.now() + timedelta(days=1))

    api_client_for(family.owner).delete("/api/me/data")

    family.legacy.refresh_from_db()
    assert family.legacy.created_by == family.member
    assert set(
        LegacyMembership.objects.filter(legacy=family.legacy).values_list("user__username", "role")
    ) == {("member", "owner"), ("newer", "member")}
    # The new owner runs the legacy: they can invite people.
    response = api_client_for(family.member).post(
        f"/api/legacies/{family.legacy.pk}/invitations",
        {"username": "stranger", "role": "member"},
        format="json",
    )
    assert response.status_code == 202
    # Nothing points at the erased account any more (created_by is PROTECT): support can
    # delete it.
    family.owner.delete()


def test_with_another_owner_that_owner_takes_over_and_nobody_is_promoted(world):
    family = world.family
    co_owner = UserFactory(username="coowner")
    MembershipFactory(legacy=family.legacy, user=co_owner, role="owner")
    LegacyMembership.objects.filter(user=co_owner).update(
        joined_at=timezone.now() + timedelta(days=1)
    )

    response = api_client_for(family.owner).delete("/api/me/data")

    assert response.json()["erased"]["legacies_transferred"] == 1
    family.legacy.refresh_from_db()
    assert family.legacy.created_by == co_owner
    assert set(
        LegacyMembership.objects.filter(legacy=family.legacy).values_list("user__username", "role")
    ) == {("member", "member"), ("coowner", "owner")}


def test_a_legacy_the_caller_created_but_left_is_handed_to_its_owner(family):
    # Support removed the creator's membership; created_by (PROTECT) still names them.
    LegacyMembership.objects.filter(legacy=family.legacy, user=family.owner).delete()
    LegacyMembership.objects.filter(legacy=family.legacy, user=family.member).update(role="owner")

    response = api_client_for(family.owner).delete("/api/me/data")

    assert response.json()["erased"] == {**ZERO, "legacies_transferred": 1, "api_tokens": 1}
    family.legacy.refresh_from_db()
    assert family.legacy.created_by == family.member
    assert list(LegacyMembership.objects.filter(legacy=family.legacy).values_list(
        "user__username", "role")) == [("member", "owner")]


def test_a_member_who_erases_leaves_the_owner_and_legacy_as_they_were(world):
    family = world.family
    client = api_client_for(family.member)
    owner_rows = owned_by(family.owner)

    response = client.delete("/api/me/data")

    assert response.status_code == 200
    assert response.json()["erased"] == {
        **ZERO, "conversations": 1, "messages": 1, "chunks": 1, "agent_memories": 1,
        "memory_versions": 1, "places": 1, "place_mentions": 1, "facts": 2, "memberships": 1,
        "api_tokens": 1,
    }
    family.legacy.refresh_from_db()
    assert family.legacy.created_by == family.owner
    assert list(LegacyMembership.objects.filter(legacy=family.legacy).values_list(
        "user__username", "role")) == [("owner", "owner")]
    assert owned_by(family.owner) == owner_rows
    assert not LegacyFact.objects.filter(pk=world.member_shared_fact.pk).exists()


def test_the_sole_member_legacy_is_deleted_with_everything_in_it(family):
    owner = family.other_member
    conversation_with_messages(legacy=family.other_legacy, user=owner, contents=["hi", "hello"])
    LegacyFactFactory(legacy=family.other_legacy, user=owner)

    response = api_client_for(owner).delete("/api/me/data")

    assert response.json()["erased"] == {
        **ZERO, "conversations": 1, "messages": 2, "facts": 1, "memberships": 1,
        "legacies_deleted": 1, "api_tokens": 1,
    }
    assert not Legacy.objects.filter(pk=family.other_legacy.pk).exists()
    assert Legacy.objects.filter(pk=family.legacy.pk).exists()
    # Nothing points at the account any more, so support can delete it.
    owner.delete()


def test_the_token_is_gone_and_its_next_call_is_401(world):
    client = api_client_for(world.family.owner)
    assert client.delete("/api/me/data").status_code == 200
    assert not Token.objects.filter(user=world.family.owner).exists()
    for method in ("get", "delete"):
        response = getattr(client, method)("/api/me/data")
        assert response.status_code == 401
        assert response.json() == {"detail": "Invalid token.", "code": "authentication_failed"}


@pytest.mark.parametrize("token", [None, "not-a-real-token"])
def test_anonymous_or_a_bad_token_is_401_and_nothing_changes(world, token):
    api_client_for(world.family.owner)  # the owner's token exists, and must survive
    client = APIClient()
    if token:
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    before = whole_state()
    response = client.delete("/api/me/data")
    assert response.status_code == 401
    assert response.json()["code"] in {"not_authenticated", "authentication_failed"}
    assert whole_state() == before


def test_the_export_after_erasing_is_empty_of_data(world):
    owner = world.family.owner
    api_client_for(owner).delete("/api/me/data")
    token = Token.objects.create(user=owner)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")

    body = client.get("/api/me/data").json()

    assert body["account"] == {
        "username": "owner", "email": "", "first_name": "", "last_name": "",
        "date_joined": owner.date_joined.isoformat(), "last_login": None,
        "api_tokens": [{"created": token.created.isoformat()}],
    }
    for kind in ("memberships", "conversations", "facts", "agent_memories", "places"):
        assert body[kind] == [], kind


def test_erasing_twice_erases_nothing_the_second_time(world):
    owner = world.family.owner
    api_client_for(owner).delete("/api/me/data")
    assert privacy_services.user_data_erase(user=owner) == ZERO


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "failing_step",
    [
        ("agent_memory.services", "user_data_erase"),
        ("facts.services", "user_data_erase"),
        ("memory_site.privacy.services", "account_erase"),
    ],
)
def test_a_failure_midway_leaves_everything_as_it_was(family, monkeypatch, failing_step):
    # A real transaction (not the test's savepoint): the erase must roll back on its own.
    import importlib

    world = build_world(family)
    client = api_client_for(world.family.owner)
    client.raise_request_exception = False
    module = importlib.import_module(failing_step[0])
    real = getattr(module, failing_step[1])

    def erase_then_fail(**kwargs):
        real(**kwargs)
        raise RuntimeError("the database went away")

    monkeypatch.setattr(module, failing_step[1], erase_then_fail)
    before = whole_state()

    response = client.delete("/api/me/data")

    assert response.status_code == 500
    assert response.json() == {"detail": "Internal server error.", "code": "error",
                               "error_id": response.json()["error_id"]}
    assert len(response.json()["error_id"]) == 12
    assert whole_state() == before
    monkeypatch.undo()
    assert client.delete("/api/me/data").status_code == 200
