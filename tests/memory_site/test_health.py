"""The health endpoint (with and without a trailing slash, like the API paths), the database
and pgvector."""

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db


@pytest.fixture
def monitor(client, settings):
    """A client with the monitoring token: it sees the checks' details (the public sees only
    the status; tests/security/test_errors.py)."""
    settings.HEALTHZ_TOKEN = "monitor-token-for-tests"
    client.defaults["HTTP_AUTHORIZATION"] = "Bearer monitor-token-for-tests"
    return client


def test_healthz_reports_database_pgvector_and_queue(monitor):
    response = monitor.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["ok"] is True
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version_num')::int / 10000")
        (server_major,) = cursor.fetchone()
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        (pgvector_version,) = cursor.fetchone()
    assert body["database"]["version"].startswith(f"PostgreSQL {server_major}.")
    assert body["pgvector"] == {"ok": True, "version": pgvector_version}
    major, minor = (int(p) for p in pgvector_version.split(".")[:2])
    assert (major, minor) >= (0, 8)
    assert body["queue"]["ok"] is True
    assert body["queue"]["broker"] == "orm"


def test_healthz_reports_a_missing_pgvector_as_503(monitor):
    # Inside the test's transaction: rolled back afterwards, tables and all.
    with connection.cursor() as cursor:
        cursor.execute("DROP EXTENSION vector CASCADE")
    response = monitor.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "degraded"
    assert body["pgvector"] == {"ok": False, "error": "the vector extension is not installed"}
    assert body["database"]["ok"] is True


@pytest.mark.parametrize("path", ["/healthz", "/healthz/"])
def test_healthz_answers_with_and_without_a_trailing_slash(monitor, path):
    response = monitor.get(path)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["status"] == "ok"
    assert {"database", "pgvector", "queue"} <= set(body)


def test_only_healthz_itself_loses_its_slash(client):
    assert client.get("/healthz/x").status_code == 404
    assert client.get("/healthzz/").status_code == 404


@pytest.mark.parametrize("path", ["/api/legacies", "/api/legacies/"])
def test_api_paths_still_answer_with_and_without_a_trailing_slash(owner_client, path):
    response = owner_client.get(path)
    assert response.status_code == 200
    assert response.json()["total"] == 1
