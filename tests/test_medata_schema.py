"""/api/me/data in the OpenAPI schema: both methods, the erase counts named."""

import pytest
import yaml

from memory_site.me import ErasedCountsSerializer

pytestmark = pytest.mark.django_db


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
