"""Writes of the platforms: keys created and revoked, platform users created on first use,
webhook endpoints registered and removed."""

import hashlib
import secrets

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from memory_site.core.errors import NotFound
from memory_site.platforms.models import (
    EXTERNAL_ID_MAX_LENGTH,
    Platform,
    PlatformKey,
    PlatformUser,
    WebhookEndpoint,
)
from memory_site.platforms.webhooks import webhook_url_validate


def external_id_validate(*, external_id: str, field: str = "external_id") -> str:
    """At most 255 printable characters, not empty, no whitespace at either end, no '/' at its
    end; `field` names it in the error."""
    if not external_id:
        message = "must not be empty."
    elif len(external_id) > EXTERNAL_ID_MAX_LENGTH:
        message = f"must be at most {EXTERNAL_ID_MAX_LENGTH} characters."
    elif not external_id.isprintable():
        message = "must contain printable characters only (no control characters)."
    elif external_id != external_id.strip():
        # HTTP trims a header's value: an id with spaces at its ends could never be sent as
        # X-User-Id, and " u" would be acted for as "u".
        message = "must not begin or end with whitespace."
    elif external_id.endswith("/"):
        # API paths are taken with or without a trailing slash (OptionalTrailingSlashMiddleware),
        # after %2F is decoded: DELETE …/members/me%2F would reach members/me, the caller
        # leaving, and team%2F the member `team`.
        message = "must not end with '/'."
    else:
        return external_id
    raise ValidationError({field: [f"{field} {message}"]})


def platform_username(platform: Platform, external_id: str) -> str:
    """Unique per platform and external id, and never one a person can be given: ':' and '#'
    are outside Django's username characters. Ids too long for a username are hashed."""
    username = f"p{platform.pk}:{external_id}"
    if len(username) <= 150:
        return username
    return f"p{platform.pk}#{hashlib.sha256(external_id.encode()).hexdigest()}"


def platform_key_create(*, name: str) -> tuple[PlatformKey, str]:
    """A new key for the platform `name` (created if new); the key itself is returned once and
    only its hash is kept."""
    with transaction.atomic():
        platform, _ = Platform.objects.get_or_create(name=name)
        return PlatformKey.objects.create_key(platform=platform, name=name)


def platform_keys_revoke(*, name: str) -> int:
    """Revoke every key of the platform `name`; its users stay, for a new key to reach them."""
    with transaction.atomic():
        platform = Platform.objects.filter(name=name).first()
        if platform is None:
            raise NotFound(f"No platform named {name!r}.")
        keys = list(platform.keys.select_for_update().filter(revoked=False))
        for key in keys:
            key.revoked = True
            key.save(update_fields=["revoked"])
        return len(keys)


def platform_user_get_or_create(
    *, platform: Platform, external_id: str, field: str = "external_id"
) -> tuple[PlatformUser, bool]:
    """The platform's user with this external id, created with a Django user of their own on
    first use. Two first requests at once both end with the one row."""
    external_id_validate(external_id=external_id, field=field)
    existing = (
        PlatformUser.objects.select_related("user")
        .filter(platform=platform, external_id=external_id)
        .first()
    )
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            # No password: a platform user never signs in to the dashboard. Not create_user,
            # whose NFKC normalisation made `ｖictim` the username of `victim`: an external id
            # is opaque, and two ids are two users.
            user = get_user_model()(username=platform_username(platform, external_id))
            user.set_unusable_password()
            user.save()
            created = PlatformUser.objects.create(
                platform=platform, external_id=external_id, user=user
            )
        return created, True
    except IntegrityError:
        existing = (
            PlatformUser.objects.select_related("user")
            .filter(platform=platform, external_id=external_id).first()
        )
        if existing is None:
            # The username is an older account's (one made before usernames kept ids as sent,
            # when create_user folded `ｖictim` into `victim`): refused, not a 500.
            raise ValidationError({field: [
                f"{field} cannot be told apart from another user's id here; use another."]}
            ) from None
        return (
            existing,
            False,
        )


def webhook_endpoint_create(*, platform: Platform, url: str) -> WebhookEndpoint:
    """Register `url` for the platform's events with a new secret, which the caller shows once.
    ValidationError for a URL that is not http(s) or does not resolve to public addresses."""
    webhook_url_validate(url)
    with transaction.atomic():
        return WebhookEndpoint.objects.create(
            platform=platform, url=url, secret=f"whsec_{secrets.token_urlsafe(32)}"
        )


def webhook_endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    """Remove the endpoint with its deliveries; pending ones are not attempted again."""
    with transaction.atomic():
        endpoint.delete()
