"""The admin cannot move data between tenants (issue 14): no foreign key of any registered model
is editable on an existing row, a staff POST that tries to move a row to another user or legacy
leaves it where it was, the family inline adds nobody, and staff actions call the services and
are logged in Django's LogEntry."""

import pytest
from django.contrib import admin
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.auth.models import Permission
from django.db import models
from django.test import RequestFactory

from conversations.models import Conversation, ConversationChunk, ConversationMemory
from facts.models import Legacy, LegacyFact, LegacyMembership
from tests.factories import (
    ConversationFactory,
    ConversationMemoryFactory,
    LegacyFactFactory,
    MembershipFactory,
    UserFactory,
)
from tests.support.chunks import chunk_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser():
    return UserFactory(username="support", is_staff=True, is_superuser=True)


@pytest.fixture
def staff(client, superuser):
    client.force_login(superuser)
    return client


def _keys(model) -> list[str]:
    """The foreign keys of a model: whose a row is, which legacy, conversation or platform."""
    return [f.name for f in model._meta.concrete_fields
            if isinstance(f, models.ForeignKey | models.OneToOneField)]


def _registered_with_keys():
    return [(model, model_admin) for model, model_admin in admin.site._registry.items()
            if _keys(model)]


def test_no_admin_lets_staff_edit_a_foreign_key_of_an_existing_row(superuser):
    request = RequestFactory().get("/admin/")
    request.user = superuser
    checked = []
    for model, model_admin in _registered_with_keys():
        row = model()  # an existing row as the change form sees it: only its class matters
        row._state.adding = False
        for admin_ in [model_admin, *model_admin.get_inline_instances(request, row)]:
            opts_model = admin_.model
            if not admin_.has_change_permission(request, row):
                checked.append((opts_model._meta.label, "view only"))
                continue
            readonly = set(admin_.get_readonly_fields(request, row))
            editable = [key for key in _keys(opts_model) if key not in readonly]
            assert not editable, f"{type(admin_).__name__} lets staff edit {editable}"
            checked.append((opts_model._meta.label, "keys read-only"))
    labels = {label for label, _ in checked}
    # The tenancy of every app is among what was checked.
    assert {"conversations.Conversation", "conversations.ConversationChunk",
            "conversations.Message", "facts.LegacyFact", "facts.LegacyMembership",
            "agent_memory.AgentMemory", "agent_memory.Place", "platforms.PlatformUser",
            "platforms.PlatformKey", "authtoken.TokenProxy"} <= labels


def test_a_staff_post_moving_a_conversation_and_its_chunk_changes_nothing(staff, family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy, title="Rose")
    chunk = chunk_for(conversation, 0, 2, "Rose grew dahlias.")
    elsewhere = ConversationFactory(user=family.other_member, legacy=family.other_legacy)

    moved = staff.post(f"/admin/conversations/conversation/{conversation.pk}/change/", {
        "user": family.other_member.pk, "legacy": family.other_legacy.pk, "title": "Moved",
    })
    chunk_moved = staff.post(f"/admin/conversations/conversationchunk/{chunk.pk}/change/", {
        "user": family.other_member.pk, "legacy": family.other_legacy.pk,
        "conversation": elsewhere.pk, "content": "Moved", "message_range_start": 0,
        "message_range_end": 2,
    })

    assert (moved.status_code, chunk_moved.status_code) == (403, 403)
    conversation.refresh_from_db()
    chunk.refresh_from_db()
    assert (conversation.user, conversation.legacy, conversation.title) == (
        family.owner, family.legacy, "Rose")
    assert (chunk.user, chunk.legacy, chunk.conversation, chunk.content) == (
        family.owner, family.legacy, conversation, "Rose grew dahlias.")
    assert not LogEntry.objects.exists()


def test_a_staff_post_moving_a_fact_changes_nothing(staff, family):
    fact = LegacyFactFactory(legacy=family.legacy, user=family.member, content="Rose sang.",
                             visibility="private")

    response = staff.post(f"/admin/facts/legacyfact/{fact.pk}/change/", {
        "user": family.other_member.pk, "legacy": family.other_legacy.pk,
        "visibility": "shared", "category": "hobby", "content": "Rose sang.",
    })

    assert response.status_code == 403
    fact.refresh_from_db()
    assert (fact.user, fact.legacy, fact.visibility) == (family.member, family.legacy, "private")


def test_the_family_inline_adds_nobody_to_a_legacy(staff, family):
    prefix = "memberships"
    response = staff.post(f"/admin/facts/legacy/{family.legacy.pk}/change/", {
        "name": family.legacy.name, "created_by": family.owner.pk,
        f"{prefix}-TOTAL_FORMS": "1", f"{prefix}-INITIAL_FORMS": "0",
        f"{prefix}-0-user": family.stranger.pk, f"{prefix}-0-role": "owner",
    })
    assert response.status_code == 403
    assert not LegacyMembership.objects.filter(user=family.stranger).exists()
    page = staff.get(f"/admin/facts/legacy/{family.legacy.pk}/change/").content.decode()
    assert f'name="{prefix}-0-user"' not in page
    assert f'name="{prefix}-MAX_NUM_FORMS" value="0"' in page
    assert staff.get("/admin/facts/legacymembership/add/").status_code == 403
    assert staff.get("/admin/facts/legacyinvitation/add/").status_code == 403


def _run(staff, model_path, action, pks):
    return staff.post(f"/admin/{model_path}/", {
        "action": action, "_selected_action": [str(pk) for pk in pks]})


def test_ending_a_membership_goes_through_the_service_and_is_logged(staff, superuser, family):
    shared = LegacyFactFactory(legacy=family.legacy, user=family.member, visibility="shared")
    membership = LegacyMembership.objects.get(legacy=family.legacy, user=family.member)

    response = _run(staff, "facts/legacymembership", "end_memberships", [membership.pk])

    assert response.status_code == 302
    assert not LegacyMembership.objects.filter(pk=membership.pk).exists()
    # What leaving does (facts.services.membership_leave): the shared fact becomes private.
    shared.refresh_from_db()
    assert shared.visibility == "private"
    entry = LogEntry.objects.get()
    assert (entry.user, entry.action_flag, entry.object_id, entry.object_repr) == (
        superuser, DELETION, str(membership.pk), f"legacy membership {membership.pk}")


def test_a_refusal_of_the_service_changes_nothing_and_logs_nothing(staff, family):
    only = LegacyMembership.objects.get(legacy=family.other_legacy)

    response = _run(staff, "facts/legacymembership", "end_memberships", [only.pk])

    assert response.status_code == 302
    assert LegacyMembership.objects.filter(pk=only.pk).exists()
    assert not LogEntry.objects.exists()
    page = staff.get(response["Location"]).content.decode()
    assert "Not done for" in page and "only member of this legacy" in page


def test_deleting_facts_and_conversations_goes_through_the_services_and_is_logged(
    staff, family
):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    from_it = LegacyFactFactory(legacy=family.legacy, user=family.owner,
                                source_conversation=conversation, content="Rose rowed.")
    fact = LegacyFactFactory(legacy=family.legacy, user=family.member, content="Rose swam.")

    _run(staff, "facts/legacyfact", "delete_facts", [fact.pk])
    _run(staff, "conversations/conversation", "delete_conversations", [conversation.pk])

    assert not LegacyFact.objects.filter(pk__in=[fact.pk, from_it.pk]).exists()
    assert not Conversation.objects.filter(pk=conversation.pk).exists()
    logged = set(LogEntry.objects.values_list("object_id", "action_flag", "object_repr"))
    assert logged == {
        (str(fact.pk), DELETION, f"legacy fact {fact.pk}"),
        (str(conversation.pk), DELETION, f"conversation {conversation.pk}"),
    }
    # The log names rows by kind and id: none of their text, which an erase must remove.
    assert not LogEntry.objects.filter(object_repr__contains="Rose").exists()


def test_retrying_a_summary_is_logged(staff, family):
    conversation = ConversationFactory(user=family.owner, legacy=family.legacy)
    failed = ConversationMemoryFactory(conversation=conversation, start_sequence=0,
                                       end_sequence=1, status="failed", error="boom")

    _run(staff, "conversations/conversationmemory", "retry_summaries", [failed.pk])

    entry = LogEntry.objects.get()
    assert (entry.object_id, entry.action_flag, entry.change_message) == (
        str(failed.pk), CHANGE, "Summary retried")


def test_staff_who_may_only_view_get_no_actions(client, family):
    viewer = UserFactory(username="viewer", is_staff=True)
    viewer.user_permissions.add(*Permission.objects.filter(codename__startswith="view_"))
    client.force_login(viewer)
    fact = LegacyFactFactory(legacy=family.legacy, user=family.member)

    page = client.get("/admin/facts/legacyfact/").content.decode()
    response = _run(client, "facts/legacyfact", "delete_facts", [fact.pk])

    assert 'value="delete_facts"' not in page
    assert response.status_code == 200  # the list again: no such action for them
    assert LegacyFact.objects.filter(pk=fact.pk).exists()
    assert not LogEntry.objects.exists()


def test_membership_rows_of_the_world_are_untouched_by_reading_the_admin(staff, family):
    MembershipFactory(legacy=family.other_legacy, user=family.stranger)
    before = set(LegacyMembership.objects.values_list("pk", "legacy_id", "user_id", "role"))
    for path in ("facts/legacy", "facts/legacymembership", "facts/legacyfact",
                 "conversations/conversation", "conversations/conversationchunk"):
        assert staff.get(f"/admin/{path}/").status_code == 200
    assert staff.get(f"/admin/facts/legacy/{family.legacy.pk}/change/").status_code == 200
    assert set(LegacyMembership.objects.values_list("pk", "legacy_id", "user_id", "role")) == before
    assert Legacy.objects.count() == 2
    assert ConversationChunk.objects.count() == 0
    assert ConversationMemory.objects.count() == 0
