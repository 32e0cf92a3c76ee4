"""Support staff find a user's memories and their history in the admin, read-only."""

import pytest
from django.contrib.auth.models import Permission

from agent_memory import services
from agent_memory.models import AgentMemory, AgentMemoryVersion
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def support(client):
    staff = UserFactory(username="support", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="agent_memory", codename__startswith="view_"
    ))
    client.force_login(staff)
    return client


def test_staff_search_a_user_s_memories_and_read_the_history(support):
    alice = UserFactory(username="alice")
    memory = services.memory_create(user=alice, content="Sarah works on the Platform team",
                                    category="person", subject="Sarah")
    services.memory_update(user=alice, memory=memory, content="Sarah works on the Design team")
    services.memory_create(user=UserFactory(username="bob"), content="Bob's memory text",
                           category="context")
    listing = support.get("/admin/agent_memory/agentmemory/?q=alice")
    assert listing.status_code == 200
    html = listing.content.decode()
    assert memory.pk in html and "Sarah works on the Design team" in html
    assert "Bob&#x27;s memory text" not in html
    detail = support.get(f"/admin/agent_memory/agentmemory/{memory.pk}/change/")
    assert detail.status_code == 200
    page = detail.content.decode()
    assert "Sarah works on the Platform team" in page and "Sarah works on the Design team" in page
    assert 'name="_save"' not in page


def test_staff_cannot_change_anything(support):
    alice = UserFactory(username="alice")
    memory = services.memory_create(user=alice, content="Alec is the user's boss",
                                    category="person")
    assert support.get("/admin/agent_memory/agentmemory/add/").status_code == 403
    response = support.post(f"/admin/agent_memory/agentmemory/{memory.pk}/change/",
                            {"category": "project", "subject": "Hacked"})
    assert response.status_code == 403
    assert support.post(f"/admin/agent_memory/agentmemory/{memory.pk}/delete/",
                        {"post": "yes"}).status_code == 403
    memory.refresh_from_db()
    assert (memory.category, memory.subject, memory.deleted_at) == ("person", None, None)
    assert AgentMemoryVersion.objects.count() == 1
    assert AgentMemory.objects.count() == 1
