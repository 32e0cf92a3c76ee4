"""The OpenAPI schema is valid, describes every API route and method, generates without
warnings, and its docs are served offline."""

import re

import pytest
import yaml
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver
from drf_spectacular.drainage import GENERATOR_STATS
from openapi_spec_validator import validate

pytestmark = pytest.mark.django_db

HTTP_METHODS = ("get", "post", "put", "patch", "delete")
# The schema and its docs page describe the API; they are not part of it.
NOT_DOCUMENTED = {"/api/schema", "/api/docs"}


def _schema(client) -> dict:
    response = client.get("/api/schema")
    assert response.status_code == 200
    return yaml.safe_load(response.content)


def _api_routes(patterns=None, prefix: str = "") -> dict[str, type]:
    """Every route of the URLconf as an OpenAPI path (`<uuid:x>` → `{x}`) with its view class."""
    routes: dict[str, type] = {}
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            routes |= _api_routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern) and hasattr(pattern.callback, "view_class"):
            path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
            routes[path] = pattern.callback.view_class
    return {
        path: view for path, view in routes.items()
        if path.startswith("/api/") and path not in NOT_DOCUMENTED
    }


def test_the_openapi_schema_is_valid_openapi_3(client):
    schema = _schema(client)
    assert schema["openapi"].startswith("3.")
    validate(schema)
    assert not any(p.endswith("/") for p in schema["paths"])


def test_every_api_route_and_method_is_in_the_schema_and_nothing_else(client):
    paths = _schema(client)["paths"]
    routes = _api_routes()
    assert len(routes) >= 20
    implemented = {
        (path, method) for path, view in routes.items()
        for method in HTTP_METHODS if hasattr(view, method)
    }
    documented = {
        (path, method) for path, operations in paths.items()
        for method in operations if method in HTTP_METHODS
    }
    assert implemented - documented == set()
    assert documented - implemented == set()


def test_schema_generation_has_no_warnings_or_errors(tmp_path, capsys):
    GENERATOR_STATS.reset()
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml")
    )
    assert capsys.readouterr().err == ""
    assert not GENERATOR_STATS


def test_delete_memory_is_documented_as_200_with_the_memory(client):
    operation = _schema(client)["paths"]["/api/memory/{memory_id}"]["delete"]
    assert "204" not in operation["responses"]
    body = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/MemoryDetail"}


def test_the_docs_page_loads_its_assets_from_this_server(client):
    response = client.get("/api/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "cdn" not in html.lower()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    asset = client.get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    assert asset.status_code == 200
