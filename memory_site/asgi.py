"""ASGI entry point; refuses a weak SECRET_KEY with DEBUG off."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
application = get_asgi_application()

from memory_site.checks import refuse_weak_secret_key  # noqa: E402 - needs Django set up

refuse_weak_secret_key()
