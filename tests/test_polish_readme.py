"""README's route table lists every API operation of the schema, and its links resolve."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
HTTP_METHODS = ("get", "post", "put", "patch", "delete")


def _anchor(heading: str) -> str:
    """GitHub's id of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(markdown: str) -> set[str]:
    return {_anchor(line.lstrip("#")) for line in markdown.splitlines() if line.startswith("#")}


@pytest.mark.django_db
def test_the_route_table_has_every_operation_of_the_schema_and_nothing_else(client):
    paths = yaml.safe_load(client.get("/api/schema").content)["paths"]
    in_schema = {
        (method.upper(), re.sub(r"\{\w+\}", "{}", path))
        for path, operations in paths.items() for method in operations if method in HTTP_METHODS
    }
    rows = re.findall(r"^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \|", README, re.MULTILINE)
    in_readme = [(method, re.sub(r"\{\w+\}", "{}", path)) for method, path in rows]
    assert len(in_readme) == len(set(in_readme))
    assert set(in_readme) == in_schema


def test_every_relative_link_of_the_readme_resolves():
    links = re.findall(r"\]\(([^)\s]+)\)", README)
    relative = [link for link in links if not link.startswith(("http://", "https://"))]
    assert len(relative) > 30
    for link in relative:
        target, _, anchor = link.partition("#")
        path = (ROOT / target).resolve() if target else ROOT / "README.md"
        # Inside the repository: a clone has nothing beside it.
        assert path.is_relative_to(ROOT) and path.exists(), link
        if anchor:
            assert anchor in _anchors(path.read_text()), link
