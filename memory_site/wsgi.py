"""WSGI entry point (gunicorn in `make serve`); refuses a weak SECRET_KEY with DEBUG off."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
application = get_wsgi_application()

from memory_site.checks import refuse_weak_secret_key  # noqa: E402 - needs Django set up

refuse_weak_secret_key()
