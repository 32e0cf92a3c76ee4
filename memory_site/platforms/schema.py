"""OpenAPI: the platform key and the X-User-Id header that goes with it."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from memory_site.platforms.authentication import USER_ID_HEADER


class PlatformKeyScheme(OpenApiAuthenticationExtension):
    target_class = "memory_site.platforms.authentication.PlatformKeyAuthentication"
    name = ["platformKey", "platformUserId"]

    def get_security_definition(self, auto_schema):
        return [
            {
                "type": "apiKey",
                "in": "header",
                "name": "Authorization",
                "description": "`Api-Key <key>`: a platform's key (`manage.py platform_key "
                "create <name>`), for the platform's servers only, never a user's device.",
            },
            {
                "type": "apiKey",
                "in": "header",
                "name": USER_ID_HEADER,
                "description": "The platform's own id of the user it acts for (at most 255 "
                "printable characters, UTF-8); created on first use.",
            },
        ]
