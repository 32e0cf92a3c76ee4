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


def _key_platform(request: object) -> object | None:
    """The platform whose key made the request, with or without X-User-Id; None otherwise."""
    return getattr(getattr(request, "auth", None), "platform_id", None)


def _platform_of(request: object) -> object | None:
    """The platform of a request made with a platform key and no X-User-Id (provisioning,
    webhooks): authenticated, but with no user (memory_site.platforms.authentication)."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return None
    return _key_platform(request)


class UserRateThrottle(_SettingRate, throttling.UserRateThrottle):
    """Every API call of a signed-in user (THROTTLE_RATE_USER), a platform's users included. A
    platform's own calls (a key, no X-User-Id) have no user: PlatformRateThrottle counts them."""

    rate_setting = "THROTTLE_RATE_USER"

    def allow_request(self, request, view) -> bool:
        return _platform_of(request) is not None or super().allow_request(request, view)


class AnonRateThrottle(_SettingRate, throttling.AnonRateThrottle):
    """Every API call without credentials, per address (THROTTLE_RATE_ANON). A platform's own
    calls (a key, no X-User-Id) are PlatformRateThrottle's."""

    rate_setting = "THROTTLE_RATE_ANON"

    def allow_request(self, request, view) -> bool:
        return _platform_of(request) is not None or super().allow_request(request, view)


class PlatformRateThrottle(_SettingRate, throttling.SimpleRateThrottle):
    """Every call made with a platform's key, per platform (THROTTLE_RATE_PLATFORM): its own
    (no X-User-Id: provisioning its users, its webhook endpoints) and those for its users, who
    also have their own count. Each new X-User-Id is a new user with a fresh count of its own,
    so without this a key could call at any rate by naming new users."""

    scope = "platform"
    rate_setting = "THROTTLE_RATE_PLATFORM"

    def get_cache_key(self, request, view) -> str | None:
        platform = _key_platform(request)
        if platform is None:
            return None  # not a platform key's call: not counted here
        return self.cache_format % {"scope": self.scope, "ident": platform}


class TurnRateThrottle(_SettingRate, throttling.UserRateThrottle):
    """The calls that may reach a model, per user (THROTTLE_RATE_TURN): a turn (up to
    TURN_MAX_TOOL_ROUNDS + 1 LLM calls), the context packet and search (an embedding of the
    query when the embedding provider is remote). Counted besides THROTTLE_RATE_USER."""

    scope = "turn"
    rate_setting = "THROTTLE_RATE_TURN"


# Added to a view's throttle_classes: the defaults plus the model-call limit.
MODEL_CALL_THROTTLES = [UserRateThrottle, AnonRateThrottle, PlatformRateThrottle,
                        TurnRateThrottle]


def refused_credentials_throttled(request: object, view: object) -> Throttled | None:
    """A request whose credentials are missing or wrong (a 401) counts against
    THROTTLE_RATE_ANON too: DRF checks the throttles after authentication and permissions, so
    without this such requests were never counted, and a token could be guessed at any rate.
    The 429 it returns, when the address is over the limit, replaces the 401."""
    throttle = AnonRateThrottle()
    if throttle.allow_request(request, view):
        return None
    return Throttled(throttle.wait())
