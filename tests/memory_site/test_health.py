"""The health endpoint (with and without a trailing slash, like the API paths), the database
and pgvector."""

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db


def test_healthz_reports_database_pgvector_and_queue(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["ok"] is True
    assert body["database"]["version"].startswith("PostgreSQL 16")
    assert body["pgvector"] == {"ok": True, "version": body["pgvector"]["version"]}
    major, minor = (int(p) for p in body["pgvector"]["version"].split(".")[:2])
    assert (major, minor) >= (0, 5)
    assert body["queue"]["ok"] is True
    assert body["queue"]["broker"] == "orm"


def test_healthz_reports_a_missing_pgvector_as_503(client):
    # Inside the test's transaction: rolled back afterwards, tables and all.
    with connection.cursor() as cursor:
        cursor.execute("DROP EXTENSION vector CASCADE")
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "error"
    assert body["pgvector"] == {"ok": False, "error": "the vector extension is not installed"}
    assert body["database"]["ok"] is True


@pytest.mark.parametrize("path", ["/healthz", "/healthz/"])
def test_healthz_answers_with_and_without_a_trailing_slash(client, path):
    response = client.get(path)
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
