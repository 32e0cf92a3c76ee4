"""`Authorization: Api-Key <key>` with `X-User-Id: <external id>`: the platform acting as one of
its users. Without X-User-Id the request is the platform's own, for provisioning only."""

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError
from rest_framework import authentication, exceptions
from rest_framework.request import Request
from rest_framework_api_key.permissions import KeyParser

from memory_site.platforms.models import PlatformKey, PlatformUser
from memory_site.platforms.services import platform_user_get_or_create, platform_username

USER_ID_HEADER = "X-User-Id"


def _utf8(header_value: str) -> str:
    """WSGI hands headers over decoded as latin-1; external ids are sent as UTF-8."""
    try:
        return header_value.encode("latin-1").decode("utf-8")
    except UnicodeError as error:
        raise ValidationError({USER_ID_HEADER: [f"{USER_ID_HEADER} must be UTF-8."]}) from error


class PlatformKeyAuthentication(authentication.BaseAuthentication):
    """request.user is the platform user (a Django user, created on first use) and request.auth
    the PlatformKey row; without X-User-Id request.user is anonymous, so only views that allow
    a platform alone (IsPlatform) answer. An unknown, revoked or malformed key is a 401, a bad
    X-User-Id a 400."""

    keyword = KeyParser.keyword

    def authenticate(self, request: Request):
        words = authentication.get_authorization_header(request).decode("latin-1").split()
        if not words or words[0].lower() != self.keyword.lower():
            return None
        if len(words) != 2:
            raise exceptions.AuthenticationFailed("Invalid platform key header.")
        key = words[1]
        try:
            platform_key = PlatformKey.objects.get_from_key(key)
        except PlatformKey.DoesNotExist:
            platform_key = None
        if platform_key is None or platform_key.has_expired:
            raise exceptions.AuthenticationFailed("Invalid or revoked platform key.")
        raw_id = request.META.get("HTTP_X_USER_ID")
        if raw_id is None:
            return AnonymousUser(), platform_key
        try:
            platform_user, _ = platform_user_get_or_create(
                platform=platform_key.platform, external_id=_utf8(raw_id), field=USER_ID_HEADER
            )
        except ValidationError as error:
            raise exceptions.ValidationError(error.message_dict) from error
        return platform_user.user, platform_key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword

    def member_username(self, request: Request, username: str, *, provision: bool = True) -> str:
        """The username of the person a platform names in a family call (facts.apis: invite, add,
        remove): always its own user of that external id, as X-User-Id names them, never a
        username stored here (`p1:ann` is the user whose external id is `p1:ann`). `me`, in any
        case, is the caller. With `provision` (invite, add) a user it has not sent yet is
        provisioned as X-User-Id would, so that an invitation reaches them when they first
        come. A name that no X-User-Id could carry (facts.serializers refuses the plain cases
        with a 400: a stored username's form, whitespace at its ends, a '/' at its end; others,
        such as a character that is not printable) names nobody: the username it would have,
        which nobody has (an invitation nobody answers, an add refused, a removal not found)."""
        if not isinstance(request.auth, PlatformKey):
            return username
        if username.lower() == "me":
            return request.user.get_username()
        nobody = platform_username(request.auth.platform, username)
        if not provision:
            return nobody
        try:
            platform_user, _ = platform_user_get_or_create(
                platform=request.auth.platform, external_id=username, field="username"
            )
        except ValidationError:
            return nobody
        return platform_user.user.get_username()

    def may_add_member(self, request: Request, username: str) -> bool:
        """Families by consent (facts.apis): a platform adds to a family directly only its own
        users, whose consent it holds; anyone else is invited."""
        return isinstance(request.auth, PlatformKey) and PlatformUser.objects.filter(
            platform_id=request.auth.platform_id, user__username=username
        ).exists()
