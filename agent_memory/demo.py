"""Demo data of the agent_memory app, written by `manage.py seed_demo` (idempotent)."""

from django.contrib.auth.models import AbstractBaseUser

from facts.models import Legacy


def seed(*, users: dict[str, AbstractBaseUser], legacy: Legacy) -> list[str]:
    """Create this app's demo rows for the demo users; return lines to print."""
    return []
