"""The login brake's authentication backend (django-axes)."""

from axes.backends import AxesStandaloneBackend
from django.http import HttpRequest


class LoginBrakeBackend(AxesStandaloneBackend):
    """django-axes' lockout check on every sign-in that comes with a request (the dashboard and
    admin login forms). A sign-in without one is not a web request (Django's test client
    `login()`, a management command), so it has no address to lock out and passes through to
    the next backend, as it would without axes."""

    def authenticate(self, request: HttpRequest | None, username: str | None = None,
                     password: str | None = None, **kwargs: object) -> None:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
