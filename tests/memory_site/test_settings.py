""".env.example documents every environment variable the settings read, with the settings'
default, and nothing else."""

import ast
import re
from pathlib import Path, PurePosixPath

import pytest

from memory_site import env

ROOT = Path(__file__).resolve().parents[2]
READERS = {
    "env_str": env.env_str,
    "env_int": env.env_int,
    "env_float": env.env_float,
    "env_bool": env.env_bool,
    "env_list": env.env_list,
}
# Read by the Makefile, not by the settings: `make run` serves on HOST:PORT, `make serve` runs
# gunicorn with these.
MAKEFILE_VARIABLES = {
    "PORT", "HOST", "WEB_CONCURRENCY", "WEB_THREADS", "WEB_TIMEOUT", "FORWARDED_ALLOW_IPS",
}


def _default(node: ast.expr) -> object:
    # A default under the project directory (BASE_DIR) is written relative in .env.example.
    code = compile(ast.Expression(node), "settings.py", "eval")
    return eval(code, {"__builtins__": {}, "BASE_DIR": PurePosixPath(), "str": str})  # noqa: S307


def _is_environ_get(func: ast.expr) -> bool:
    return (
        isinstance(func, ast.Attribute) and func.attr == "get"
        and isinstance(func.value, ast.Attribute) and func.value.attr == "environ"
    )


def settings_variables() -> dict[str, tuple[str, object]]:
    """NAME → (reader, default) of every env_*("NAME", default) and os.environ.get("NAME",
    default) call in the settings modules."""
    found: dict[str, tuple[str, object]] = {}
    for module in ("settings.py", "settings_test.py"):
        tree = ast.parse((ROOT / "memory_site" / module).read_text())
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call) or not call.args:
                continue
            if isinstance(call.func, ast.Name) and call.func.id in READERS:
                reader = call.func.id
            elif _is_environ_get(call.func):
                reader = "env_str"
            else:
                continue
            name = ast.literal_eval(call.args[0])
            default = _default(call.args[1]) if len(call.args) > 1 else ""
            assert found.get(name, (reader, default)) == (reader, default), name
            found[name] = (reader, default)
    return found


def documented() -> dict[str, str]:
    lines = (ROOT / ".env.example").read_text().splitlines()
    pairs = [line.split("=", 1) for line in lines if re.match(r"^[A-Z0-9_]+=", line)]
    names = [name for name, _ in pairs]
    assert len(names) == len(set(names)), "a variable is listed twice"
    return dict(pairs)


def makefile_defaults() -> dict[str, str]:
    text = (ROOT / "Makefile").read_text()
    return dict(re.findall(r"^([A-Z0-9_]+) \?= (.*)$", text, flags=re.MULTILINE))


def test_env_example_lists_every_variable_the_settings_read_and_no_other():
    read = settings_variables()
    assert len(read) > 40
    assert set(documented()) == set(read) | MAKEFILE_VARIABLES


@pytest.mark.parametrize("name", sorted(settings_variables()))
def test_env_example_shows_the_default_of_the_settings(name, monkeypatch):
    reader, default = settings_variables()[name]
    value = documented()[name]
    if value == "":
        assert default in ("", []), f"{name}: .env.example says empty, settings say {default!r}"
        return
    # Read the documented value as the settings would read it from the environment.
    monkeypatch.setenv(name, value)
    assert READERS[reader](name, object()) == default


def test_env_example_shows_the_makefile_defaults():
    defaults = makefile_defaults()
    assert {name: documented()[name] for name in MAKEFILE_VARIABLES} == {
        name: defaults[name] for name in MAKEFILE_VARIABLES
    }
