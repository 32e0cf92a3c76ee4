"""`manage.py seed_demo`: demo users, a legacy they share, and API tokens to try the API at once."""

import logging
import os
from contextlib import contextmanager

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from rest_framework.authtoken.models import Token

from facts.models import LegacyMembership
from facts.selectors import legacies_for_user, legacy_members
from facts.services import legacy_create, legacy_member_add
from memory_site.demo import agent_memory as agent_memory_demo
from memory_site.demo import conversations as conversations_demo
from memory_site.demo import facts as facts_demo

DEMO_PASSWORD = "memory-demo-2026"
DEMO_LEGACY = "Rose Whitfield"
DEMO_USERS = (
    ("alice", "Alice", "Whitfield", LegacyMembership.Role.OWNER),
    ("bob", "Bob", "Whitfield", LegacyMembership.Role.MEMBER),
)


@contextmanager
def _quiet_job_queue():
    """django-q2 logs every job it enqueues at INFO, between the lines this command prints."""
    queue_logger = logging.getLogger("django-q")
    level = queue_logger.level
    queue_logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        queue_logger.setLevel(level)


class Command(BaseCommand):
    help = "Create demo users (alice owns, bob is a member), their legacy, and API tokens."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--print-token",
            metavar="USERNAME",
            help="Print only this demo user's API token (for scripts and the README's curl).",
        )

    def handle(self, *args, **options) -> None:
        with _quiet_job_queue():
            self._seed(options)

    def _seed(self, options: dict) -> None:
        User = get_user_model()
        with transaction.atomic():
            users = {}
            for username, first, last, _ in DEMO_USERS:
                user, created = User.objects.get_or_create(
                    username=username, defaults={"first_name": first, "last_name": last}
                )
                if created:
                    user.set_password(DEMO_PASSWORD)
                    user.save(update_fields=["password"])
                users[username] = user
            owner = users["alice"]
            legacy = legacies_for_user(owner).filter(name=DEMO_LEGACY, created_by=owner).first()
            seeded = legacy is not None
            if legacy is None:
                legacy = legacy_create(user=owner, name=DEMO_LEGACY)
            members = set(legacy_members(legacy=legacy).values_list("user__username", flat=True))
            for username, _, _, role in DEMO_USERS:
                if username not in members:
                    legacy_member_add(
                        legacy=legacy, added_by=owner, username=username, role=role
                    )
            tokens = {name: Token.objects.get_or_create(user=u)[0].key for name, u in users.items()}
            # Conversations first: facts and memories point at the demo conversations. All of it
            # once only: a run after the first (the README's `--print-token`) must not bring
            # back what the user deleted, nor add again a fact they corrected.
            report = conversations_demo.seed(users=users, legacy=legacy, create=not seeded)
            if seeded:
                report.append("Conversations, facts and memories: seeded by an earlier run; "
                              "nothing was added (what was deleted or corrected since stays so).")
            else:
                for seed in (facts_demo.seed, agent_memory_demo.seed):
                    report += seed(users=users, legacy=legacy)

        if options.get("print_token"):
            if options["print_token"] not in tokens:
                raise CommandError(f"No demo user {options['print_token']!r}; try alice or bob.")
            self.stdout.write(tokens[options["print_token"]])
            return
        self.stdout.write(self.style.SUCCESS("Demo data is ready."))
        self.stdout.write(f"Legacy: {legacy.name}  id={legacy.pk}")
        for username, _, _, role in DEMO_USERS:
            self.stdout.write(
                f"User {username} ({role}): password={DEMO_PASSWORD}  token={tokens[username]}"
            )
        for line in report:
            self.stdout.write(line)
        self.stdout.write("")
        self.stdout.write("Try it:")
        self.stdout.write(
            f'  curl -s -H "Authorization: Token {tokens["alice"]}" '
            f"http://{_serving_address()}/api/legacies"
        )


def _serving_address() -> str:
    """Where `make run` (bin/run) last served from this data folder, as it wrote it; PORT when
    set; else its default."""
    if os.environ.get("PORT"):
        return f"127.0.0.1:{os.environ['PORT']}"
    try:
        written = (settings.MEMORY_DATA_DIR / "serving").read_text().strip()
    except OSError:
        written = ""
    return written or "127.0.0.1:8000"
