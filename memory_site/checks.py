"""Production checks of the project's configuration: the secret key, and the rate limits."""

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
