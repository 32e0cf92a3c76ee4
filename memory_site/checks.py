"""Production checks of the project's configuration: the secret key, the rate limits, and the
database server's pgvector."""

from django.conf import settings
from django.core.checks import Error, Tags, register
from django.core.exceptions import ImproperlyConfigured

DEVELOPMENT_SECRET_KEY = "dev-insecure-change-me-legacy-memory"
SECRET_KEY_MIN_LENGTH = 50
SECRET_KEY_HINT = (
    "Set SECRET_KEY to at least 50 random characters, kept secret and the same for every "
    "process (web and job workers), e.g. the output of: "
    "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'. "
    "For development only, DEBUG=true allows the default."
)


def secret_key_problem() -> str | None:
    """What is wrong with SECRET_KEY for production, or None."""
    key = settings.SECRET_KEY or ""
    if not key or key == DEVELOPMENT_SECRET_KEY:
        return "SECRET_KEY is not set: the public development default is in use."
    if key.startswith("django-insecure-"):
        return "SECRET_KEY is a development key."
    if len(key) < SECRET_KEY_MIN_LENGTH or len(set(key)) < 5:
        return f"SECRET_KEY is too short or too simple (at least {SECRET_KEY_MIN_LENGTH} characters)."
    return None


def refuse_weak_secret_key() -> None:
    """Called by wsgi.py and asgi.py: with DEBUG off, a server does not start on a weak key,
    however it is started (make serve, systemd, a container)."""
    if settings.DEBUG:
        return
    problem = secret_key_problem()
    if problem:
        raise ImproperlyConfigured(f"{problem} {SECRET_KEY_HINT}")


@register(Tags.security, deploy=True)
def check_secret_key(app_configs, **kwargs) -> list:
    problem = secret_key_problem()
    if problem is None:
        return []
    return [Error(problem, hint=SECRET_KEY_HINT, id="memory_site.E001")]


@register()
def check_rate_limits(app_configs, **kwargs) -> list:
    from rest_framework.throttling import SimpleRateThrottle

    problems = []
    for name in ("THROTTLE_RATE_USER", "THROTTLE_RATE_TURN", "THROTTLE_RATE_ANON"):
        rate = getattr(settings, name)
        if not rate:
            continue
        try:
            requests, _ = SimpleRateThrottle.parse_rate(None, rate)
            if requests < 1:
                raise ValueError
        except (ValueError, KeyError, IndexError, AttributeError):
            problems.append(Error(
                f"{name}={rate!r} is not a rate.",
                hint='Write "<number>/<second|minute|hour|day>", e.g. 600/minute, or leave it '
                "empty for no limit.",
                id="memory_site.E002",
            ))
    return problems


PGVECTOR_MIN_VERSION = "0.8.0"
PGVECTOR_HINT = (
    "Retrieval uses HNSW iterative index scans, new in pgvector 0.8. Install pgvector 0.8 or "
    "newer on the server of DATABASE_URL (e.g. the postgresql-NN-pgvector package or the "
    "pgvector/pgvector Docker image) and run ALTER EXTENSION vector UPDATE in the database; "
    "or leave DATABASE_URL empty for the embedded PostgreSQL 18 with pgvector 0.8."
)


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def pgvector_problem(installed: str | None, available: str | None) -> str | None:
    """What is wrong with the server's pgvector, from its installed version in the database
    and the version CREATE EXTENSION would install; None when it is new enough."""
    minimum = _version_tuple(PGVECTOR_MIN_VERSION)
    if installed is not None:
        if _version_tuple(installed) < minimum:
            return f"pgvector {installed} is installed; {PGVECTOR_MIN_VERSION} or newer is needed."
        return None
    if available is None:
        return "The database server has no pgvector (the vector extension)."
    if _version_tuple(available) < minimum:
        return f"The database server offers pgvector {available}; {PGVECTOR_MIN_VERSION} or newer is needed."
    return None


@register(Tags.compatibility)
def check_pgvector(app_configs, databases=None, **kwargs) -> list:
    from django.db import DatabaseError, connection

    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT installed_version, default_version FROM pg_available_extensions"
                " WHERE name = 'vector'"
            )
            row = cursor.fetchone()
    except DatabaseError:
        return []  # no server to ask: the commands that need one report that themselves
    problem = pgvector_problem(*(row or (None, None)))
    if problem is None:
        return []
    return [Error(problem, hint=PGVECTOR_HINT, id="memory_site.E003")]
