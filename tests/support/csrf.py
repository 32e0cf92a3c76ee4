"""Browser-like dashboard clients: CSRF enforced, the token taken from a page as a form would."""

import re

from django.test import Client


def signed_in(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def csrf_token(client: Client, page: str) -> str:
    html = client.get(page).content.decode()
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
