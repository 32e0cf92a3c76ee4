"""Production settings: the documented environment makes `check --deploy` silent, and a weak
SECRET_KEY with DEBUG off stops the checks and the web server, saying what to set."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOYMENT = ROOT / "docs" / "deployment.md"


def production_env() -> dict[str, str]:
    """The ```env block of docs/deployment.md, "A production environment"."""
    section = DEPLOYMENT.read_text().split("## A production environment", 1)[1]
    block = re.search(r"```env\n(.*?)```", section, re.DOTALL).group(1)
    return dict(line.split("=", 1) for line in block.splitlines() if line.strip())


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess:
    # Not what the test session set for itself (the browser tests allow async-unsafe calls).
    ignored = {"DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    base = {k: v for k, v in os.environ.items() if k not in production_env() and k not in ignored}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**base, "DJANGO_SETTINGS_MODULE": "memory_site.settings", **env},
    )


def _documented(**changes: str) -> dict[str, str]:
    env = production_env()
    # The documented servers are examples: the checks must not need them.
    env.pop("DATABASE_URL")
    env.pop("REDIS_URL")
    env["Q_BROKER"] = "orm"
    return {**env, **changes}


def test_the_documented_production_environment_makes_check_deploy_silent():
    result = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                  **_documented(SECRET_KEY=secrets.token_urlsafe(50)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "System check identified no issues (0 silenced)."
    assert result.stderr == ""


@pytest.mark.parametrize(("key", "problem"), [
    ("", "SECRET_KEY is not set: the public development default is in use."),
    ("dev-insecure-change-me-legacy-memory", "SECRET_KEY is not set: the public development"),
    ("replace-with-50-random-characters", "SECRET_KEY is too short or too simple"),
])
def test_a_weak_secret_key_fails_the_deploy_check_with_what_to_set(key, problem):
    result = _run(["manage.py", "check", "--deploy", "--fail-level", "ERROR"],
                  **_documented(SECRET_KEY=key))
    assert result.returncode == 1
    assert f"(memory_site.E001) {problem}" in result.stderr
    assert "Set SECRET_KEY to at least 50 random characters" in result.stderr


def test_the_web_server_refuses_a_weak_key_with_debug_off_and_accepts_it_with_debug_on():
    load = ["-c", "import memory_site.wsgi, memory_site.asgi; print('loaded')"]
    refused = _run(load, DEBUG="false", SECRET_KEY="")
    assert refused.returncode == 1
    assert "ImproperlyConfigured: SECRET_KEY is not set: the public development default is in " \
        "use. Set SECRET_KEY to at least 50 random characters" in refused.stderr
    assert _run(load, DEBUG="true", SECRET_KEY="").stdout == "loaded\n"
    assert _run(load, DEBUG="false", SECRET_KEY=secrets.token_urlsafe(50)).stdout == "loaded\n"


def test_settings_read_the_https_variables():
    script = ("from django.conf import settings as s; print(s.SECURE_PROXY_SSL_HEADER, "
              "s.SECURE_HSTS_SECONDS, s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, "
              "s.CSRF_COOKIE_SECURE, s.CSRF_TRUSTED_ORIGINS, s.NUM_PROXIES)")
    result = _run(["-c", f"import django; django.setup(); {script}"],
                  **_documented(SECRET_KEY=secrets.token_urlsafe(50)))
    assert result.stdout == ("('HTTP_X_FORWARDED_PROTO', 'https') 31536000 True True True "
                             "['https://memory.example.org'] 1\n")
    bad = _run(["-c", "import django; django.setup()"], SECURE_PROXY_SSL_HEADER="X-Proto")
    assert "SECURE_PROXY_SSL_HEADER must be a header and its value" in bad.stderr


def test_redis_broker_without_redis_url_is_refused():
    result = _run(["-c", "import django; django.setup()"], Q_BROKER="redis", REDIS_URL="")
    assert result.returncode == 1
    assert "Q_BROKER=redis needs REDIS_URL" in result.stderr
