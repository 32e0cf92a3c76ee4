"""README's route table lists every API operation of the schema, its links resolve, and its
commands for real users work: a non-interactive superuser, a token from drf_create_token that
the API accepts, and the admin's Tokens page."""

import io
import re
from pathlib import Path

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.factories import UserFactory

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
HTTP_METHODS = ("get", "post", "put", "patch", "delete")


def _anchor(heading: str) -> str:
    """GitHub's id of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(markdown: str) -> set[str]:
    return {_anchor(line.lstrip("#")) for line in markdown.splitlines() if line.startswith("#")}


@pytest.mark.django_db
def test_the_route_table_has_every_operation_of_the_schema_and_nothing_else(client):
    paths = yaml.safe_load(client.get("/api/schema").content)["paths"]
    in_schema = {
        (method.upper(), re.sub(r"\{\w+\}", "{}", path))
        for path, operations in paths.items() for method in operations if method in HTTP_METHODS
    }
    rows = re.findall(r"^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \|", README, re.MULTILINE)
    in_readme = [(method, re.sub(r"\{\w+\}", "{}", path)) for method, path in rows]
    assert len(in_readme) == len(set(in_readme))
    assert set(in_readme) == in_schema


def test_every_relative_link_of_the_readme_resolves():
    links = re.findall(r"\]\(([^)\s]+)\)", README)
    relative = [link for link in links if not link.startswith(("http://", "https://"))]
    assert len(relative) > 30
    for link in relative:
        target, _, anchor = link.partition("#")
        path = (ROOT / target).resolve() if target else ROOT / "README.md"
        # Inside the repository: a clone has nothing beside it.
        assert path.is_relative_to(ROOT) and path.exists(), link
        if anchor:
            assert anchor in _anchors(path.read_text()), link


pytestmark = pytest.mark.django_db


def test_createsuperuser_noinput_takes_the_password_from_the_environment(monkeypatch):
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "a-long-admin-password")
    call_command(
        "createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.org",
        stdout=io.StringIO(),
    )
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff
    assert admin.check_password("a-long-admin-password")
    client = Client()
    assert client.login(username="admin", password="a-long-admin-password")
    assert client.get("/admin/authtoken/tokenproxy/").status_code == 200


def test_drf_create_token_prints_a_token_the_api_accepts():
    UserFactory(username="margaret")
    out = io.StringIO()
    call_command("drf_create_token", "margaret", stdout=out)
    key = Token.objects.get(user__username="margaret").key
    assert out.getvalue() == f"Generated token {key} for user margaret\n"
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = client.get("/api/legacies")
    assert response.status_code == 200
    assert response.json() == {"legacies": [], "total": 0, "limit": 50, "offset": 0}
