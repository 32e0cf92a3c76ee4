"""Checking real API answers against the OpenAPI schema the project serves."""

from openapi_schema_validator import OAS30Validator, oas30_format_checker


def resolve(schema: dict, spec: dict) -> dict:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def key_problems(value, schema: dict, spec: dict, where: str = "body") -> list[str]:
    """Objects with documented properties: no undocumented key, no missing required key, all
    the way down."""
    schema = resolve(schema, spec)
    if value is None:
        return []
    if options := schema.get("oneOf") or schema.get("anyOf"):
        # One of the alternatives fits: the problems of the nearest, when none does.
        return min((key_problems(value, option, spec, where) for option in options), key=len)
    for combined in schema.get("allOf", []):
        if "properties" in (inner := resolve(combined, spec)):
            return key_problems(value, inner, spec, where)
    problems = []
    if isinstance(value, dict) and "properties" in schema:
        documented, required = set(schema["properties"]), set(schema.get("required", []))
        if undocumented := set(value) - documented:
            problems.append(f"{where}: undocumented {sorted(undocumented)}")
        if missing := required - set(value):
            problems.append(f"{where}: missing {sorted(missing)}")
        for key in set(value) & documented:
            problems += key_problems(value[key], schema["properties"][key], spec, f"{where}.{key}")
    elif isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        for key, item in value.items():
            problems += key_problems(item, schema["additionalProperties"], spec, f"{where}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            problems += key_problems(item, schema["items"], spec, f"{where}[{index}]")
    return problems


def documented_schema(spec: dict, path: str, method: str, status: int) -> dict:
    response = spec["paths"][path][method]["responses"][str(status)]
    return response["content"]["application/json"]["schema"]


def assert_documented(response, spec: dict, path: str, method: str) -> dict:
    """The response's body is exactly what the schema says of this path, method and status."""
    schema = documented_schema(spec, path, method, response.status_code)
    body = response.json()
    OAS30Validator(
        {**schema, "components": spec["components"]}, format_checker=oas30_format_checker
    ).validate(body)
    assert key_problems(body, schema, spec) == []
    return body


def documented_properties(spec: dict, path: str, method: str, status: int) -> set[str]:
    return set(resolve(documented_schema(spec, path, method, status), spec)["properties"])
