"""`manage.py seed_demo` makes demo users, a shared legacy and tokens that work with the API."""

import io
import logging

import pytest
from django.core.management import call_command
from django_q.models import OrmQ
from rest_framework.authtoken.models import Token
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


def test_seed_demo_prints_the_curl_for_the_port_of_make_run(monkeypatch):
    monkeypatch.setenv("PORT", "8050")
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    token = Token.objects.get(user__username="alice").key
    assert out.getvalue().splitlines()[-1] == (
        f'  curl -s -H "Authorization: Token {token}" http://127.0.0.1:8050/api/legacies'
    )
    monkeypatch.delenv("PORT")
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    assert out.getvalue().splitlines()[-1].endswith(" http://127.0.0.1:8000/api/legacies")


@pytest.mark.django_db(transaction=True)
def test_seed_demo_does_not_log_the_jobs_it_enqueues(settings, caplog):
    # Committed for real, with the ORM queue of `make run`, so the jobs are enqueued in the
    # command, where django-q2 logs each at INFO between the command's own lines.
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "sync": False}
    with caplog.at_level(logging.INFO):
        call_command("seed_demo", stdout=io.StringIO())
    assert OrmQ.objects.exists()
    assert [r.getMessage() for r in caplog.records if r.name == "django-q"] == []
    assert logging.getLogger("django-q").level == logging.NOTSET


def test_a_second_seed_demo_says_what_the_jobs_made(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_demo", stdout=io.StringIO())
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("Conversation ")]
    assert [line.split(": id=")[1].split(" ", 1)[1] for line in lines] == [
        "messages=34 summaries=1 chunks=2 (all archived)",
        "messages=10 summaries=1 chunks=1 (all archived)",
    ]
    assert "made by the worker" not in out.getvalue()
