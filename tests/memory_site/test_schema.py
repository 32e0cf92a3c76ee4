"""The OpenAPI schema is valid, describes every API route and method (/api/me/data with both
methods and the erase counts named), generates without warnings, and its docs are served
offline."""

import re

import pytest
import yaml
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver
from drf_spectacular.drainage import GENERATOR_STATS
from openapi_spec_validator import validate

from memory_site.privacy.serializers import ErasedCountsSerializer

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


def _operations(paths: dict):
    for path, operations in paths.items():
        for method, operation in operations.items():
            if method in HTTP_METHODS:
                yield path, method, operation


def _body(response: dict) -> dict | None:
    return response.get("content", {}).get("application/json", {}).get("schema")


def test_every_operation_documents_its_common_errors_in_the_shared_error_body(client):
    schema = _schema(client)
    error = {"$ref": "#/components/schemas/Error"}
    assert set(schema["components"]["schemas"]["Error"]["required"]) == {"detail", "code"}
    assert set(schema["components"]["schemas"]["Error"]["properties"]) == {
        "detail", "code", "errors", "error_id"
    }
    for path, method, operation in _operations(schema["paths"]):
        responses = operation["responses"]
        # Every API endpoint needs credentials; every id in a path goes through a scoped selector.
        assert _body(responses.get("401", {})) == error, (path, method)
        if "{" in path:
            assert "404" in responses, (path, method)
        for status, response in responses.items():
            if status.startswith(("4", "5")):
                assert _body(response) is not None, (path, method, status)


def test_every_operation_has_a_one_line_summary_and_a_description(client):
    summaries = []
    for path, method, operation in _operations(_schema(client)["paths"]):
        summary = operation.get("summary", "")
        assert summary and "\n" not in summary and len(summary) <= 60, (path, method, summary)
        assert len(operation.get("description", "")) >= 40, (path, method)
        summaries.append(summary)
    assert len(summaries) >= 31
    assert len(set(summaries)) == len(summaries)


def test_no_answer_is_documented_as_a_plain_object(client):
    schema = _schema(client)
    for path, method, operation in _operations(schema["paths"]):
        for status, response in operation["responses"].items():
            body = _body(response)
            if body is not None and "$ref" not in body:
                named = (body.get("type") == "array" and "$ref" in body["items"]
                         # Either of two named answers (the tools' errors).
                         or all("$ref" in option for option in body.get("anyOf", [{}])))
                assert named, (path, method, status, body)


def test_delete_memory_is_documented_as_200_with_the_memory(client):
    operation = _schema(client)["paths"]["/api/memory/{memory_id}"]["delete"]
    assert set(operation["responses"]) == {"200", "401", "404", "429", "503"}
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


def test_the_schema_describes_export_and_erase(client):
    schema = yaml.safe_load(client.get("/api/schema").content)
    operations = schema["paths"]["/api/me/data"]
    assert set(operations) == {"get", "delete"}
    assert operations["get"]["summary"] == "Export all my data"
    assert "requestBody" not in operations["delete"]
    erased = operations["delete"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert erased == {"$ref": "#/components/schemas/Erased"}
    counts = schema["components"]["schemas"]["ErasedCounts"]
    assert set(counts["properties"]) == set(ErasedCountsSerializer().fields)
    assert set(counts["required"]) == set(ErasedCountsSerializer().fields)


def test_every_body_may_be_too_large_or_of_another_type_and_every_write_busy(client):
    """Found by an integrator walkthrough: a 42 MB body got a clear 413, form data a 415, and no
    operation said so; nor does any say a write may lose a race in the database (503 busy)."""
    schema = _schema(client)
    operations = [(path, method, operation) for path, item in schema["paths"].items()
                  for method, operation in item.items()
                  if method in ("get", "post", "put", "patch", "delete")]
    with_body = [(p, m, o) for p, m, o in operations if "requestBody" in o]
    assert with_body
    for path, method, operation in with_body:
        assert {"413", "415"} <= set(operation["responses"]), (path, method)
    for path, method, operation in operations:
        assert ("503" in operation["responses"]) == (method != "get"), (path, method)
