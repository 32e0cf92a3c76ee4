"""The login brake (django-axes) on the dashboard and admin sign-in: by username and address
together, 429 with a page that says so, lifted after the cool-off or a successful sign-in."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.utils import timezone

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

DASHBOARD = "/accounts/login/"
ADMIN = "/admin/login/"


def _login(client, url: str, username: str, password: str, address: str = "10.0.0.1"):
    return client.post(url, {"username": username, "password": password},
                       REMOTE_ADDR=address)


@pytest.mark.parametrize("url", [DASHBOARD, ADMIN])
def test_failures_lock_out_that_username_from_that_address(settings, client, url):
    UserFactory(username="alice", password="right-password", is_staff=True)
    settings.AXES_FAILURE_LIMIT = 3
    for _ in range(2):
        assert _login(client, url, "alice", "wrong").status_code == 200  # the form again
    locked = _login(client, url, "alice", "wrong")
    assert locked.status_code == 429
    assert "Too many sign-in attempts" in locked.content.decode()
    # Even the right password is refused while locked out, and nobody is signed in.
    assert _login(client, url, "alice", "right-password").status_code == 429
    assert "_auth_user_id" not in client.session
    # Another address, or another username from this address, is not locked out.
    assert _login(client, url, "alice", "right-password", "10.0.0.9").status_code == 302
    client.logout()
    UserFactory(username="bob", password="bob-password", is_staff=True)
    assert _login(client, url, "bob", "bob-password").status_code == 302


def test_the_lockout_ends_after_the_cool_off(settings, client):
    UserFactory(username="alice", password="right-password")
    settings.AXES_FAILURE_LIMIT = 2
    for _ in range(2):
        _login(client, DASHBOARD, "alice", "wrong")
    assert _login(client, DASHBOARD, "alice", "right-password").status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    assert _login(client, DASHBOARD, "alice", "right-password").status_code == 302


def test_a_successful_sign_in_resets_the_count(settings, client):
    UserFactory(username="alice", password="right-password")
    settings.AXES_FAILURE_LIMIT = 3
    for _ in range(2):
        _login(client, DASHBOARD, "alice", "wrong")
    assert _login(client, DASHBOARD, "alice", "right-password").status_code == 302
    client.logout()
    for _ in range(2):
        assert _login(client, DASHBOARD, "alice", "wrong").status_code == 200
    assert _login(client, DASHBOARD, "alice", "right-password").status_code == 302


def test_behind_proxies_the_address_is_the_one_the_outermost_proxy_saw(settings, client):
    UserFactory(username="alice", password="right-password")
    settings.AXES_FAILURE_LIMIT = 2
    settings.NUM_PROXIES = 1
    for claimed in ("1.1.1.1", "2.2.2.2"):  # what a client writes first is not believed
        client.post(DASHBOARD, {"username": "alice", "password": "wrong"},
                    REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=f"{claimed}, 10.0.0.1")
    assert AccessAttempt.objects.get().ip_address == "10.0.0.1"
    assert client.post(DASHBOARD, {"username": "alice", "password": "right-password"},
                       REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="10.0.0.1"
                       ).status_code == 429
