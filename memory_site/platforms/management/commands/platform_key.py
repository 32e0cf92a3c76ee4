"""manage.py platform_key create|list|revoke: a platform's keys from the command line."""

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_site.core.errors import NotFound
from memory_site.platforms.models import PlatformKey
from memory_site.platforms.services import platform_key_create, platform_keys_revoke


class Command(BaseCommand):
    help = (
        "create <name>: a new key for the platform (created if new), printed once; "
        "list: every key, without the secret; revoke <name>: every key of the platform."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="print a new key of the platform, once")
        create.add_argument("name", help="the platform's name (at most 50 characters)")
        actions.add_parser("list", help="every key: prefix, platform, created, revoked")
        revoke = actions.add_parser("revoke", help="revoke every key of the platform")
        revoke.add_argument("name")

    def handle(self, *args, action: str, name: str = "", **options) -> None:
        if action == "create":
            if not name.strip() or len(name) > 50:
                raise CommandError("The name must be 1 to 50 characters.")
            platform_key, key = platform_key_create(name=name)
            self.stderr.write(
                f"Key {platform_key.prefix} of platform {name!r}: store it now, it is not shown "
                "again. For the platform's servers only, never a user's device."
            )
            self.stdout.write(key)
        elif action == "list":
            for platform_key in PlatformKey.objects.select_related("platform").order_by("created"):
                state = "revoked" if platform_key.revoked else "active"
                self.stdout.write(
                    f"{platform_key.prefix}\t{platform_key.platform.name}\t"
                    f"{platform_key.created:%Y-%m-%d %H:%M}\t{state}"
                )
        else:
            try:
                count = platform_keys_revoke(name=name)
            except NotFound as error:
                raise CommandError(error.message) from error
            self.stdout.write(f"Revoked {count} key(s) of platform {name!r}.")
