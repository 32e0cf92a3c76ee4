"""/healthz answers its JSON with and without a trailing slash, like the API paths."""

import pytest

pytestmark = pytest.mark.django_db


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
