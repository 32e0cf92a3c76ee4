"""The OpenAPI schema validates and its docs are served offline."""

import pytest
import yaml
from openapi_spec_validator import validate

pytestmark = pytest.mark.django_db


def test_the_openapi_schema_is_valid_openapi_3(client):
    response = client.get("/api/schema")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.")
    validate(schema)
    paths = schema["paths"]
    for path in (
        "/api/legacies",
        "/api/legacies/{legacy_id}/members",
        "/api/ai/conversations",
        "/api/ai/conversations/{conversation_id}",
        "/api/ai/conversations/{conversation_id}/messages",
    ):
        assert path in paths, path
    assert not any(p.endswith("/") for p in paths)


def test_the_docs_page_loads_its_assets_from_this_server(client):
    response = client.get("/api/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "cdn" not in html.lower()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    asset = client.get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    assert asset.status_code == 200
