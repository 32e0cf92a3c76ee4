"""Authorization as a generated matrix: every URL pattern of the project (walked from the root
URLconf: API, dashboard pages, admin, sign-in, schema and docs, health, the platform API) ×
GET, POST, PUT, PATCH, DELETE × seven callers, each with its exact status; a denied request
changes no row of the tables it could reach.

The callers: anonymous; a stranger (signed in, in no family); a member of another family; a
fellow member of the family; the owner, who wrote everything the routes name; staff (a
superuser who is in no family); and a platform key acting for one of its users, who is in no
family either. API calls carry a token (a platform key for the last caller), pages a session.

EXPECTED below is the one table of expectations, keyed by URL name (or pattern, for a route
without a name). A route the walk finds and the table lacks fails test_matrix with what to
add. Every call runs inside a savepoint that is rolled back, so one world serves a route's
calls. MATRIX_RECORD=1 prints the statuses seen, in the table's format, instead of failing.
"""

import copy
import os
import re
from dataclasses import dataclass, field

import pytest
from django.contrib import admin
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.core.cache import cache
from django.db import connection, transaction
from django.test import Client, RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.authtoken.models import Token

from agent_memory.models import AgentMemory, AgentMemoryVersion, Place
from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message
from facts.models import Legacy, LegacyFact, LegacyInvitation, LegacyMembership
from memory_site.platforms.models import Platform, PlatformUser, WebhookEndpoint
from memory_site.platforms.services import platform_key_create, platform_user_get_or_create
from tests.factories import InvitationFactory, UserFactory
from tests.support.world import MeWorld, build_world

pytestmark = pytest.mark.django_db

METHODS = ("get", "post", "put", "patch", "delete")
CALLERS = ("anonymous", "stranger", "other_family", "fellow_member", "owner", "staff", "platform")
RECORD = os.environ.get("MATRIX_RECORD") == "1"

# The tables a request could change; compared row by row, values and all.
WATCHED = [
    Legacy, LegacyMembership, LegacyInvitation, LegacyFact, Conversation, Message,
    ConversationMemory, ConversationChunk, AgentMemory, AgentMemoryVersion, Place, Token,
    PlatformUser, WebhookEndpoint, LogEntry,
]


def _snapshot() -> tuple:
    """A digest of every row of the watched tables and of the users (values and all), in one
    query: equal digests, no row added, removed or changed."""
    digests = [
        f"(SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {table} t)"
        for table in (model._meta.db_table for model in WATCHED)
    ]
    # Users without last_login, which signing a test client in sets.
    digests.append(
        "(SELECT md5(coalesce(string_agg(concat_ws(',', id, username, email, is_active, "
        f"is_staff, is_superuser, password), '|' ORDER BY id), '')) FROM {User._meta.db_table})"
    )
    digests = ", ".join(digests)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {digests}")
        return cursor.fetchone()


# --- Walking the URLconf -----------------------------------------------------------------------


def url_patterns() -> list[tuple[str, str]]:
    """(key, route) of every URL pattern: key is the namespaced name, or the route itself for
    a pattern without a name."""

    def walk(patterns, prefix: str, namespace: str | None):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = pattern.namespace
                if inner:
                    inner = f"{namespace}:{inner}" if namespace else inner
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern),
                                inner or namespace)
            elif isinstance(pattern, URLPattern):
                route = prefix + str(pattern.pattern)
                name = pattern.name
                key = (f"{namespace}:{name}" if namespace else name) if name else route
                yield key, route

    return list(walk(get_resolver().url_patterns, "", None))


ALL_PATTERNS = url_patterns()


# --- The world ---------------------------------------------------------------------------------


@dataclass
class World:
    me: MeWorld
    users: dict
    platform_key: str
    invitation: LegacyInvitation  # the owner's pending invitation of the stranger
    webhook: WebhookEndpoint
    values: dict = field(default_factory=dict)
    clients: dict = field(default_factory=dict)


@pytest.fixture
def world(family, settings) -> World:
    settings.THROTTLE_RATE_USER = ""
    settings.THROTTLE_RATE_ANON = ""
    settings.THROTTLE_RATE_TURN = ""
    settings.THROTTLE_RATE_PLATFORM = ""
    me = build_world(family)
    staff = UserFactory(username="staff")
    User.objects.filter(pk=staff.pk).update(is_staff=True, is_superuser=True)
    staff.refresh_from_db()
    _, key = platform_key_create(name="matrix-platform")
    platform = Platform.objects.get(name="matrix-platform")
    platform_user, _ = platform_user_get_or_create(platform=platform, external_id="ext-someone")
    webhook = WebhookEndpoint.objects.create(
        platform=platform, url="https://chat.example/hooks", secret="s" * 40
    )
    invitation = InvitationFactory(legacy=family.legacy, invited_user=family.stranger)
    for user in (family.owner, family.member, family.stranger, family.other_member, staff):
        Token.objects.get_or_create(user=user)
    users = {
        "anonymous": None, "stranger": family.stranger, "other_family": family.other_member,
        "fellow_member": family.member, "owner": family.owner, "staff": staff,
        "platform": platform_user.user,
    }
    world = World(me=me, users=users, platform_key=key, invitation=invitation, webhook=webhook)
    world.values = _path_values(world)
    return world


def _path_values(world: World) -> dict:
    me = world.me
    return {
        "legacy_id": me.family.legacy.pk,
        "conversation_id": me.conversation.pk,
        "fact_id": me.shared_fact.pk,
        "memory_id": me.memory.pk,
        "place_pk": me.place.pk,
        "invitation_id": world.invitation.pk,
        "username": me.family.member.username,
        "name": "get_memory",
        "endpoint_id": world.webhook.pk,
    }


# --- Callers -----------------------------------------------------------------------------------


def _client(world: World, caller: str, api: bool) -> Client:
    """The caller's client, made once per world (a session sign-in writes rows)."""
    made = world.clients.get((caller, api))
    if made is not None:
        return made
    client = world.clients[(caller, api)] = Client()
    user = world.users[caller]
    if caller == "platform":
        client.defaults.update(HTTP_AUTHORIZATION=f"Api-Key {world.platform_key}",
                               HTTP_X_USER_ID="ext-someone")
    elif user is not None and api:
        client.defaults.update(HTTP_AUTHORIZATION=f"Token {Token.objects.get(user=user).key}")
    elif user is not None:
        client.force_login(user)
    return client


# --- Expectations ------------------------------------------------------------------------------
# The status of each method for each caller, in the order of CALLERS:
#   (anonymous, stranger, other_family, fellow_member, owner, staff, platform)
# Reviewed by hand: 401 for the API without credentials and a sign-in redirect (302) for pages
# (also for a platform key, which pages do not take); 404 for what belongs to another family or
# to another member (a conversation, a memory, a place are their owner's alone), 403 for what a
# fellow member may see but not change; 405 for a method a route does not have. POSTs carry no
# body: 415 (API) or 400 (a page's form) means the caller got past authorization to validation.
# A member's shared fact is the `fact_id`; the stranger holds the owner's pending invitation.
EXPECTED: dict[str, dict[str, tuple[int, ...]]] = {
    "healthz": {
        "get": (200, 200, 200, 200, 200, 200, 200),
        "post": (405, 405, 405, 405, 405, 405, 405),
        "put": (405, 405, 405, 405, 405, 405, 405),
        "patch": (405, 405, 405, 405, 405, 405, 405),
        "delete": (405, 405, 405, 405, 405, 405, 405),
    },
    "favicon.ico": {
        "get": (302, 302, 302, 302, 302, 302, 302),
        "post": (302, 302, 302, 302, 302, 302, 302),
        "put": (302, 302, 302, 302, 302, 302, 302),
        "patch": (302, 302, 302, 302, 302, 302, 302),
        "delete": (302, 302, 302, 302, 302, 302, 302),
    },
    "schema": {
        "get": (200, 200, 200, 200, 200, 200, 200),
        "post": (405, 405, 405, 405, 405, 405, 405),
        "put": (405, 405, 405, 405, 405, 405, 405),
        "patch": (405, 405, 405, 405, 405, 405, 405),
        "delete": (405, 405, 405, 405, 405, 405, 405),
    },
    "api-docs": {
        "get": (200, 200, 200, 200, 200, 200, 200),
        "post": (405, 405, 405, 405, 405, 405, 405),
        "put": (405, 405, 405, 405, 405, 405, 405),
        "patch": (405, 405, 405, 405, 405, 405, 405),
        "delete": (405, 405, 405, 405, 405, 405, 405),
    },
    "api-legacies": {
        "get": (401, 200, 200, 200, 200, 200, 200),
        "post": (401, 415, 415, 415, 415, 415, 415),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-legacy-members": {
        "get": (401, 404, 404, 200, 200, 404, 404),
        "post": (401, 404, 404, 415, 415, 404, 404),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-legacy-member-leave": {
        "get": (401, 405, 405, 405, 405, 405, 405),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 404, 404, 200, 200, 404, 404),
    },
    "api-legacy-member": {
        "get": (401, 405, 405, 405, 405, 405, 405),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 404, 404, 200, 200, 404, 404),
    },
    "api-legacy-invitations": {
        "get": (401, 404, 404, 403, 200, 404, 404),
        "post": (401, 404, 404, 415, 415, 404, 404),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-legacy-invitation": {
        "get": (401, 405, 405, 405, 405, 405, 405),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 404, 404, 403, 204, 404, 404),
    },
    "api-invitations": {
        "get": (401, 200, 200, 200, 200, 200, 200),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-invitation-accept": {
        "get": (401, 405, 405, 405, 405, 405, 405),
        "post": (401, 201, 404, 404, 404, 404, 404),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-invitation-decline": {
        "get": (401, 405, 405, 405, 405, 405, 405),
        "post": (401, 200, 404, 404, 404, 404, 404),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-legacy-facts": {
        "get": (401, 404, 404, 200, 200, 404, 404),
        "post": (401, 404, 404, 415, 415, 404, 404),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-fact-detail": {
        "get": (401, 405, 405, 405, 405, 405, 405),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 404, 404, 403, 200, 404, 404),
        "delete": (401, 404, 404, 403, 204, 404, 404),
    },
    "api-fact-visibility": {
        "get": (401, 405, 405, 405, 405, 405, 405),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 404, 404, 403, 400, 404, 404),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-fact-undo-correction": {
        "get": (401, 405, 405, 405, 405, 405, 405),
        "post": (401, 404, 404, 403, 409, 404, 404),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-legacy-fact-conflicts": {
        "get": (401, 404, 404, 200, 200, 404, 404),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-conversations": {
        "get": (401, 200, 200, 200, 200, 200, 200),
        "post": (401, 415, 415, 415, 415, 415, 415),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-conversation-detail": {
        "get": (401, 404, 404, 404, 200, 404, 404),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 404, 404, 404, 200, 404, 404),
    },
    "api-conversation-messages": {
        "get": (401, 404, 404, 404, 200, 404, 404),
        "post": (401, 404, 404, 404, 415, 404, 404),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-conversation-messages-batch": {
        "get": (401, 405, 405, 405, 405, 405, 405),
        "post": (401, 404, 404, 404, 415, 404, 404),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-conversation-memory": {
        "get": (401, 404, 404, 404, 200, 404, 404),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-conversation-chunks": {
        "get": (401, 404, 404, 404, 200, 404, 404),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-conversation-close": {
        "get": (401, 405, 405, 405, 405, 405, 405),
        "post": (401, 404, 404, 404, 200, 404, 404),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-legacy-search": {
        "get": (401, 404, 404, 400, 400, 404, 404),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-conversation-context": {
        "get": (401, 404, 404, 404, 200, 404, 404),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-conversation-turn": {
        "get": (401, 405, 405, 405, 405, 405, 405),
        "post": (401, 404, 404, 404, 415, 404, 404),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-conversation-checkpoint": {
        "get": (401, 404, 404, 404, 200, 404, 404),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-memories": {
        "get": (401, 200, 200, 200, 200, 200, 200),
        "post": (401, 415, 415, 415, 415, 415, 415),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-memory-document": {
        "get": (401, 200, 200, 200, 200, 200, 200),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-memory-detail": {
        "get": (401, 404, 404, 404, 200, 404, 404),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 404, 404, 404, 400, 404, 404),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 404, 404, 404, 200, 404, 404),
    },
    "api-tools": {
        "get": (401, 200, 200, 200, 200, 200, 200),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-tool-execute": {
        "get": (401, 405, 405, 405, 405, 405, 405),
        "post": (401, 404, 404, 404, 404, 404, 404),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "api-commands": {
        "get": (401, 405, 405, 405, 405, 405, 405),
        "post": (401, 415, 415, 415, 415, 415, 415),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 405, 405, 405, 405, 405, 405),
    },
    "me-data": {
        "get": (401, 200, 200, 200, 200, 200, 200),
        "post": (401, 405, 405, 405, 405, 405, 405),
        "put": (401, 405, 405, 405, 405, 405, 405),
        "patch": (401, 405, 405, 405, 405, 405, 405),
        "delete": (401, 200, 200, 200, 200, 200, 200),
    },
    "platform-users": {
        "get": (401, 403, 403, 403, 403, 403, 405),
        "post": (401, 403, 403, 403, 403, 403, 415),
        "put": (401, 403, 403, 403, 403, 403, 405),
        "patch": (401, 403, 403, 403, 403, 403, 405),
        "delete": (401, 403, 403, 403, 403, 403, 405),
    },
    "platform-webhooks": {
        "get": (401, 403, 403, 403, 403, 403, 200),
        "post": (401, 403, 403, 403, 403, 403, 415),
        "put": (401, 403, 403, 403, 403, 403, 405),
        "patch": (401, 403, 403, 403, 403, 403, 405),
        "delete": (401, 403, 403, 403, 403, 403, 405),
    },
    "platform-webhook-detail": {
        "get": (401, 403, 403, 403, 403, 403, 405),
        "post": (401, 403, 403, 403, 403, 403, 405),
        "put": (401, 403, 403, 403, 403, 403, 405),
        "patch": (401, 403, 403, 403, 403, 403, 405),
        "delete": (401, 403, 403, 403, 403, 403, 204),
    },
    "login": {
        "get": (200, 200, 200, 200, 200, 200, 200),
        "post": (200, 200, 200, 200, 200, 200, 200),
        "put": (200, 200, 200, 200, 200, 200, 200),
        "patch": (405, 405, 405, 405, 405, 405, 405),
        "delete": (405, 405, 405, 405, 405, 405, 405),
    },
    "logout": {
        "get": (405, 405, 405, 405, 405, 405, 405),
        "post": (302, 302, 302, 302, 302, 302, 302),
        "put": (405, 405, 405, 405, 405, 405, 405),
        "patch": (405, 405, 405, 405, 405, 405, 405),
        "delete": (405, 405, 405, 405, 405, 405, 405),
    },
    "facts:legacy_list": {
        "get": (302, 200, 200, 200, 200, 200, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    # Anyone signed in creates a legacy (an empty form is a 400: the name is required).
    "facts:legacy_create": {
        "get": (302, 405, 405, 405, 405, 405, 302),
        "post": (302, 400, 400, 400, 400, 400, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "facts:legacy_detail": {
        "get": (302, 404, 404, 200, 200, 404, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "facts:legacy_leave": {
        "get": (302, 404, 404, 200, 200, 404, 302),
        "post": (302, 404, 404, 400, 400, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "facts:legacy_invite": {
        "get": (302, 405, 405, 405, 405, 405, 302),
        "post": (302, 404, 404, 400, 400, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "facts:legacy_invitation_withdraw": {
        "get": (302, 405, 405, 405, 405, 405, 302),
        "post": (302, 404, 404, 403, 302, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "facts:invitations": {
        "get": (302, 200, 200, 200, 200, 200, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "facts:invitation_answer": {
        "get": (302, 405, 405, 405, 405, 405, 302),
        "post": (302, 400, 404, 404, 404, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "facts:legacy_facts": {
        "get": (302, 404, 404, 200, 200, 404, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "facts:fact_add": {
        "get": (302, 405, 405, 405, 405, 405, 302),
        "post": (302, 404, 404, 400, 400, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "facts:fact_row": {
        "get": (302, 404, 404, 302, 302, 404, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "facts:fact_visibility": {
        "get": (302, 405, 405, 405, 405, 405, 302),
        "post": (302, 404, 404, 403, 400, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "facts:fact_edit": {
        "get": (302, 404, 404, 403, 200, 404, 302),
        "post": (302, 404, 404, 403, 400, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "facts:fact_delete": {
        "get": (302, 404, 404, 403, 200, 404, 302),
        "post": (302, 404, 404, 403, 302, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "facts:fact_undo_correction": {
        "get": (302, 405, 405, 405, 405, 405, 302),
        "post": (302, 404, 404, 403, 409, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "conversations:conversation_list": {
        "get": (302, 404, 404, 200, 200, 404, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "conversations:conversation_delete": {
        "get": (302, 404, 404, 404, 200, 404, 302),
        "post": (302, 404, 404, 404, 302, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "conversations:transcript": {
        "get": (302, 404, 404, 404, 200, 404, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "conversations:fact_source": {
        "get": (302, 404, 404, 200, 200, 404, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "conversations:chat": {
        "get": (302, 200, 200, 200, 200, 200, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "conversations:chat_start": {
        "get": (302, 405, 405, 405, 405, 405, 302),
        "post": (302, 404, 404, 404, 404, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "conversations:chat_conversation": {
        "get": (302, 404, 404, 404, 200, 404, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "conversations:chat_send": {
        "get": (302, 405, 405, 405, 405, 405, 302),
        "post": (302, 404, 404, 404, 302, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "conversations:chat_end": {
        "get": (302, 405, 405, 405, 405, 405, 302),
        "post": (302, 404, 404, 404, 302, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "agent_memory:memory_list": {
        "get": (302, 200, 200, 200, 200, 200, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "agent_memory:memory_add": {
        "get": (302, 200, 200, 200, 200, 200, 302),
        "post": (302, 400, 400, 400, 400, 400, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "agent_memory:memory_history": {
        "get": (302, 404, 404, 404, 200, 404, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "agent_memory:memory_card": {
        "get": (302, 404, 404, 404, 302, 404, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "agent_memory:memory_edit": {
        "get": (302, 404, 404, 404, 200, 404, 302),
        "post": (302, 404, 404, 404, 400, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "agent_memory:memory_delete": {
        "get": (302, 404, 404, 404, 200, 404, 302),
        "post": (302, 404, 404, 404, 302, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "agent_memory:memory_restore": {
        "get": (302, 405, 405, 405, 405, 405, 302),
        "post": (302, 404, 404, 404, 400, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "agent_memory:memory_revert": {
        "get": (302, 405, 405, 405, 405, 405, 302),
        "post": (302, 404, 404, 404, 400, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "agent_memory:place_list": {
        "get": (302, 200, 200, 200, 200, 200, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "agent_memory:place_card": {
        "get": (302, 404, 404, 404, 302, 404, 302),
        "post": (302, 405, 405, 405, 405, 405, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "agent_memory:place_edit": {
        "get": (302, 404, 404, 404, 200, 404, 302),
        "post": (302, 404, 404, 404, 400, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
    "agent_memory:place_delete": {
        "get": (302, 404, 404, 404, 200, 404, 302),
        "post": (302, 404, 404, 404, 302, 404, 302),
        "put": (302, 405, 405, 405, 405, 405, 302),
        "patch": (302, 405, 405, 405, 405, 405, 302),
        "delete": (302, 405, 405, 405, 405, 405, 302),
    },
}


# --- Admin -------------------------------------------------------------------------------------


def _admin_object_id(route: str) -> str | None:
    """A row of the model an admin route is about, or None for routes of no model."""
    for model, _ in admin.site._registry.items():
        if route.startswith(f"admin/{model._meta.app_label}/{model._meta.model_name}/"):
            row = model.objects.order_by("pk").first()
            return None if row is None else str(row.pk)
    return None


def _is_admin(key: str) -> bool:
    return key.startswith("admin:") or key.startswith("admin/")


# --- The test ----------------------------------------------------------------------------------


def _parameters(route: str) -> list[str]:
    return re.findall(r"<(?:\w+:)?(\w+)>", route) + re.findall(r"\(\?P<(\w+)>", route)


def _path(key: str, route: str, values: dict) -> str:
    kwargs = {name: values[name] for name in _parameters(route)}
    if key != route:
        return reverse(key, kwargs=kwargs)
    path = "/" + route
    for name, value in kwargs.items():
        path = re.sub(rf"<(\w+:)?{name}>", str(value), path)
    return path


def _call(client: Client, method: str, path: str, body, api_route: bool):
    if body is None:
        return getattr(client, method)(path)
    if api_route:
        return getattr(client, method)(path, body, content_type="application/json")
    if method == "post":
        return client.post(path, body)
    return getattr(client, method)(path, body)


def _check(world: World, key: str, route: str, expected: dict | None, methods=METHODS,
           callers=CALLERS) -> tuple[list[str], dict]:
    """Call the route with each method as each caller; the problems and the statuses seen."""
    api_route = route.startswith("api/")
    path = _path(key, route, {**world.values, **_admin_values(world, route)})
    for caller in callers:
        _client(world, caller, api_route)
    before = _snapshot()
    problems, seen = [], {}
    for method in methods:
        for index, caller in enumerate(CALLERS):
            if caller not in callers:
                continue
            cache.clear()
            sid = transaction.savepoint()
            client = _client(world, caller, api_route)
            cookies = copy.deepcopy(client.cookies)  # a sign-out would clear them
            try:
                response = _call(client, method, path, None, api_route)
                status, location = response.status_code, response.get("Location", "")
                denied = status in (401, 403, 404, 405) or (status == 302 and "login" in location)
                changed = denied and _snapshot() != before
            finally:
                transaction.savepoint_rollback(sid)
                client.cookies = cookies
            seen.setdefault(method, {})[caller] = status
            want = expected[method][index] if expected else None
            if want is not None and status != want:
                problems.append(f"{method.upper()} {path} as {caller}: {status}, expected {want}")
            if changed:
                problems.append(f"{method.upper()} {path} as {caller}: denied ({status}) but "
                                f"rows changed")
    return problems, seen


def _record(key: str, route: str, seen: dict) -> None:
    print(f"\nRECORD {key!r} {route!r}")
    for method, statuses in seen.items():
        print(f"RECORD   {method}: {statuses}")


def test_every_url_pattern_has_an_entry():
    missing = [f"{route!r} ({key})" for key, route in ALL_PATTERNS
               if not _is_admin(key) and key not in EXPECTED]
    assert not missing, (
        "URL patterns without an entry in EXPECTED of tests/security/test_authorization_matrix"
        ".py: add one with the status each caller must get for each method (run with "
        "MATRIX_RECORD=1 -s to print what they get now, then check every status):\n"
        + "\n".join(missing)
    )
    assert sorted(set(EXPECTED) - {key for key, _ in ALL_PATTERNS}) == [], "entries of gone routes"


def test_matrix(world):
    """Every route but the admin's, all methods, all callers, in one world."""
    problems = []
    for key, route in ALL_PATTERNS:
        if _is_admin(key) or (key not in EXPECTED and not RECORD):
            continue  # test_every_url_pattern_has_an_entry names it
        found, seen = _check(world, key, route, None if RECORD else EXPECTED[key])
        problems += found
        if RECORD:
            _record(key, route, seen)
    assert not problems, "\n".join(problems)


def test_admin_matrix(world):
    """Every admin route (the index, each registered model's changelist, add, change, delete
    and history, the rest of the site's pages): staff only. Anyone else, signed in or not, is
    sent to the admin's sign-in page, and a POST changes nothing."""
    problems = []
    for key, route in ALL_PATTERNS:
        if not _is_admin(key):
            continue
        expected = None if RECORD else _admin_expectation(world, key, route)
        found, seen = _check(world, key, route, expected, methods=("get", "post"),
                             callers=[c for c in CALLERS if c != "staff"])
        staff, staff_seen = _check(world, key, route, expected, methods=("get",),
                                   callers=["staff"])
        problems += found + staff
        if RECORD:
            _record(key, route, {**seen, "get": {**seen["get"], **staff_seen["get"]}})
    assert not problems, "\n".join(problems)


def _admin_values(world: World, route: str) -> dict:
    if not route.startswith("admin/"):
        return {}
    values = {"object_id": _admin_object_id(route) or "0", "id": world.users["owner"].pk,
              "app_label": "facts", "url": "no-such-page/"}
    if "content_type_id" in route:
        values.update(content_type_id=ContentType.objects.get_for_model(Legacy).pk,
                      object_id=world.me.family.legacy.pk)
    return values


STAFF_GET = {"admin:login": 302, "admin:logout": 405, "admin:autocomplete": 403,
             "admin:view_on_site": 404}


def _admin_expectation(world: World, key: str, route: str) -> dict:
    """Anyone but staff is sent to the admin's sign-in page (302), where a GET or POST shows
    the form (200); staff get each page, or 403 where the model's admin forbids adding or
    deleting, or 302 to the index for a model without rows."""
    shown = 200 if key == "admin:login" else 302
    non_staff = {"get": shown, "post": shown}
    staff = STAFF_GET.get(key, 200)
    model_admin = _model_admin(route)
    if model_admin is not None and key != route:
        request = RequestFactory().get("/admin/")
        request.user = world.users["staff"]
        row = model_admin.model.objects.order_by("pk").first()
        forbidden = (
            (key.endswith("_add") and not model_admin.has_add_permission(request))
            or (key.endswith("_delete") and not model_admin.has_delete_permission(request, row))
        )
        if forbidden:
            staff = 403
        elif key.endswith(("_change", "_delete", "_history")) and row is None:
            staff = 302
    if key == route and "(?P<url>" in route:  # the catch-all: staff are told it is not found
        staff = 404
    elif key == route:  # admin/<app>/<model>/<path:object_id>/: redirects to the change page
        non_staff, staff = {"get": 302, "post": 302}, 302
    return {
        method: tuple(staff if caller == "staff" else non_staff[method] for caller in CALLERS)
        for method in ("get", "post")
    }


def _model_admin(route: str):
    for model, model_admin in admin.site._registry.items():
        if route.startswith(f"admin/{model._meta.app_label}/{model._meta.model_name}/"):
            return model_admin
    return None
