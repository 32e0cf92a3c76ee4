"""`manage.py seed_demo` makes demo users, a shared legacy and tokens that work with the API."""

import io

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from facts.models import Legacy, LegacyMembership

pytestmark = pytest.mark.django_db


def _token(username: str) -> str:
    out = io.StringIO()
    call_command("seed_demo", print_token=username, stdout=out)
    return out.getvalue().strip()


def test_seed_demo_is_idempotent_and_prints_working_tokens():
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    call_command("seed_demo", stdout=io.StringIO())
    text = out.getvalue()
    assert "User alice (owner)" in text and "User bob (member)" in text
    legacy = Legacy.objects.get(name="Rose Whitfield")
    assert Legacy.objects.count() == 1
    roles = dict(legacy.memberships.values_list("user__username", "role"))
    assert roles == {"alice": "owner", "bob": "member"}
    assert LegacyMembership.objects.count() == 2


def test_the_readme_curl_flow_appends_a_message():
    token = _token("alice")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    legacy_id = client.get("/api/legacies").json()["legacies"][0]["id"]
    conversation = client.post(
        "/api/ai/conversations", {"legacy_id": legacy_id, "title": "First chat"}, format="json"
    ).json()
    response = client.post(
        f"/api/ai/conversations/{conversation['id']}/messages",
        {"role": "user", "content": "Mum grew roses in Galway."},
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["sequence"] == 0
