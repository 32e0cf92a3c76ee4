"""The README's commands for real users work: a non-interactive superuser, a token from
drf_create_token that the API accepts, and the admin's Tokens page."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.factories import UserFactory

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
