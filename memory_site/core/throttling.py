"""The API's rate limits: DRF throttles whose rates are settings read at request time.

State lives in Django's default cache, which is shared by every process (Redis, or the
database cache), so a limit holds across web workers and machines. A refusal is DRF's
Throttled (429 with Retry-After), which memory_site.core.api.exception_handler turns into
`{"detail", "code": "throttled"}`.
"""

from django.conf import settings
from rest_framework import throttling
from rest_framework.exceptions import Throttled


class _SettingRate:
    """The rate comes from the setting named by `rate_setting` at each request, so that tests
    and deployments change it without reloading DRF; an empty rate means no limit."""

    rate_setting = ""

    def get_rate(self) -> str | None:
        return getattr(settings, self.rate_setting, "") or None


class UserRateThrottle(_SettingRate, throttling.UserRateThrottle):
    """Every API call of a signed-in user (THROTTLE_RATE_USER)."""

    rate_setting = "THROTTLE_RATE_USER"


class AnonRateThrottle(_SettingRate, throttling.AnonRateThrottle):
    """Every API call without credentials, per address (THROTTLE_RATE_ANON)."""

    rate_setting = "THROTTLE_RATE_ANON"


class TurnRateThrottle(_SettingRate, throttling.UserRateThrottle):
    """The calls that may reach a model, per user (THROTTLE_RATE_TURN): a turn (up to
    TURN_MAX_TOOL_ROUNDS + 1 LLM calls), the context packet and search (an embedding of the
    query when the embedding provider is remote). Counted besides THROTTLE_RATE_USER."""

    scope = "turn"
    rate_setting = "THROTTLE_RATE_TURN"


# Added to a view's throttle_classes: the defaults plus the model-call limit.
MODEL_CALL_THROTTLES = [UserRateThrottle, AnonRateThrottle, TurnRateThrottle]


def refused_credentials_throttled(request: object, view: object) -> Throttled | None:
    """A request whose credentials are missing or wrong (a 401) counts against
    THROTTLE_RATE_ANON too: DRF checks the throttles after authentication and permissions, so
    without this such requests were never counted, and a token could be guessed at any rate.
    The 429 it returns, when the address is over the limit, replaces the 401."""
    throttle = AnonRateThrottle()
    if throttle.allow_request(request, view):
        return None
    return Throttled(throttle.wait())
