"""Reads of legacies and facts. Tenancy starts here: only members see anything of a legacy."""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from uuid import UUID

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.db.models import Case, Count, F, OuterRef, Q, QuerySet, Subquery, Value, When

from facts.models import FactConflict, Legacy, LegacyFact, LegacyInvitation, LegacyMembership
from memory_site.core.errors import NotFound
from memory_site.core.sql import PreparedRead, prepared_cursor, quoted_table, user_and_id_samples


def legacies_for_user(user: AbstractBaseUser) -> QuerySet[Legacy]:
    """The legacies `user` is a member of (owner or member), with their creator loaded (the API
    shows it for each)."""
    if not user.is_authenticated:
        return Legacy.objects.none()
    return (
        Legacy.objects.filter(memberships__user=user)
        .annotate(my_role=F("memberships__role"))
        .select_related("created_by__platform_user")
    )


# Every legacy-scoped request reads its legacy: compiled once per process, prepared on the
# server (memory_site.core.sql.PreparedRead). At most one row (one membership per user and
# legacy): no ORDER BY, which .first() adds.
_LEGACY_READ = PreparedRead(
    lambda user, pk: legacies_for_user(user).filter(pk=pk).order_by()[:1],
    samples=user_and_id_samples,
)


def legacy_for_member(*, user: AbstractBaseUser, legacy_id: object) -> Legacy:
    """The legacy if `user` is a member; otherwise NotFound, the same as if it did not exist
    (also for an id that is not a UUID)."""
    return _LEGACY_READ.one_for(user, legacy_id)


def _platform_user_of(user: object) -> Any:
    """The platform's record of its user (memory_site.platforms.PlatformUser, read by the
    reverse accessor of its one-to-one key, so that this app imports nothing of the roof), or
    None for a person who signs in here."""
    return getattr(user, "platform_user", None)


def external_id_of(user: object) -> str | None:
    """A platform's own id for its user (the X-User-Id it sends), None for a person."""
    platform_user = _platform_user_of(user)
    return None if platform_user is None else platform_user.external_id


def realm_of(user: object) -> object | None:
    """Where an account lives: the id of the platform whose user it is, or None for a person
    who signs in here. An invitation crosses no realm: one platform never reaches another's
    users, nor a person a platform's users, nor the reverse."""
    platform_user = _platform_user_of(user)
    return None if platform_user is None else platform_user.platform_id


def invited_within_realm(user: AbstractBaseUser) -> Q:
    """Invitations to `user` sent from their own realm (realm_of): one sent across realms
    before invitation_create refused them stays unseen and unanswerable."""
    realm = realm_of(user)
    if realm is None:
        return Q(invited_by__platform_user__isnull=True)
    return Q(invited_by__platform_user__platform_id=realm)


def legacy_members(*, legacy: Legacy) -> QuerySet[LegacyMembership]:
    """The family, longest-standing member first."""
    return legacy.memberships.select_related("user__platform_user").order_by("joined_at", "id")


def invitations_pending_for(user: AbstractBaseUser) -> QuerySet[LegacyInvitation]:
    """The invitations waiting for the user's answer, oldest first."""
    if not user.is_authenticated:
        return LegacyInvitation.objects.none()
    return (
        LegacyInvitation.objects.filter(
            invited_within_realm(user), invited_user=user, status=LegacyInvitation.Status.PENDING
        )
        .select_related("legacy", "invited_by__platform_user")
        .order_by("created_at", "id")
    )


def invitation_for_invitee(*, user: AbstractBaseUser, invitation_id: object) -> LegacyInvitation:
    """An invitation addressed to the user, answered or not; anyone else's, or one whose
    legacy is gone, is NotFound (also an id that is not a UUID)."""
    if not user.is_authenticated:
        raise NotFound()
    try:
        invitation = (
            LegacyInvitation.objects.filter(invited_within_realm(user), pk=invitation_id,
                                            invited_user=user)
            .select_related("legacy", "invited_by")
            .first()
        )
    except (ValidationError, ValueError):
        raise NotFound() from None
    if invitation is None:
        raise NotFound()
    return invitation


def legacy_pending_invitations(*, legacy: Legacy) -> QuerySet[LegacyInvitation]:
    """The legacy's invitations not answered yet, for its owners (an unknown username's among
    them, which nobody can answer), oldest first."""
    return (
        legacy.invitations.filter(status=LegacyInvitation.Status.PENDING)
        .select_related("invited_by__platform_user", "invited_user__platform_user")
        .order_by("created_at", "id")
    )


def is_legacy_owner(*, legacy: Legacy, user: AbstractBaseUser) -> bool:
    return LegacyMembership.objects.filter(
        legacy=legacy, user=user, role=LegacyMembership.Role.OWNER
    ).exists()


def legacy_heir(
    *, role: str | None, others: list[LegacyMembership]
) -> LegacyMembership | None:
    """Who becomes the legacy's owner when a member of `role` (None: not a member) leaves it:
    its longest-standing other member (`others` ordered by joined_at), if the leaver is an
    owner and no other owner remains; otherwise nobody is promoted (None). Leaving, removal
    and erasing all hand legacies on by this rule (facts.services._hand_on)."""
    if role != LegacyMembership.Role.OWNER or not others:
        return None
    if any(other.role == LegacyMembership.Role.OWNER for other in others):
        return None
    return others[0]


@dataclass(frozen=True)
class LeavePreview:
    """What leaving a legacy would do, for the confirmation page (docs/facts.md "Family")."""

    membership: LegacyMembership
    others: list[LegacyMembership]
    heir: LegacyMembership | None
    shared_facts: int

    @property
    def is_last_member(self) -> bool:
        return not self.others


def membership_leave_preview(*, legacy: Legacy, user: AbstractBaseUser) -> LeavePreview:
    """What `membership_leave` would do now for a member of `legacy` (reached through
    legacy_for_member); NotFound if the user is not a member."""
    members = list(legacy_members(legacy=legacy))
    membership = next((m for m in members if m.user_id == user.pk), None)
    if membership is None:
        raise NotFound()
    others = [m for m in members if m.user_id != user.pk]
    return LeavePreview(
        membership=membership,
        others=others,
        heir=legacy_heir(role=membership.role, others=others),
        shared_facts=LegacyFact.objects.filter(
            legacy=legacy, user=user, visibility=LegacyFact.Visibility.SHARED
        ).count(),
    )


def legacies_with_member_counts(user: AbstractBaseUser) -> QuerySet[Legacy]:
    counts = (
        LegacyMembership.objects.filter(legacy=OuterRef("pk"))
        .values("legacy")
        .annotate(n=Count("id"))
        .values("n")
    )
    return legacies_for_user(user).annotate(member_count=Subquery(counts)).order_by("name")


def _visible_to(user: AbstractBaseUser, prefix: str = "") -> Q:
    """A fact `user` may see, given membership: their own, or a shared one."""
    return Q(**{f"{prefix}user": user}) | Q(
        **{f"{prefix}visibility": LegacyFact.Visibility.SHARED}
    )


def facts_visible_to(
    user: AbstractBaseUser, legacy: Legacy, *, include_corrected: bool = False
) -> QuerySet[LegacyFact]:
    """Seed 000's retrieval: the user's own facts about the legacy plus every member's shared
    ones, oldest extraction first; current facts only (what the prompt and the default lists
    show), or with `include_corrected` the ones later facts corrected too. Nothing unless the
    user is a member of the legacy."""
    if not user.is_authenticated or not LegacyMembership.objects.filter(
        legacy=legacy, user=user
    ).exists():
        return LegacyFact.objects.none()
    facts = LegacyFact.objects.filter(legacy=legacy).filter(_visible_to(user))
    if not include_corrected:
        facts = facts.filter(superseded_by__isnull=True)
    else:
        # Whether the user may see what corrected a fact (successor_visible_to reads it).
        facts = facts.annotate(successor_visibility=F("superseded_by__visibility"))
    return facts.select_related("user").order_by("extracted_at", "id")


def successor_visible_to(user: AbstractBaseUser, fact: LegacyFact) -> bool:
    """Whether `user` may see the fact that corrected `fact` (its author's, so theirs, or a
    shared one): a fellow member is not told that a private correction exists, nor its id or
    time. True for a current fact. Read from facts_visible_to's annotation when there is one,
    else with a query."""
    if fact.superseded_by_id is None or fact.user_id == user.pk:
        return True
    visibility = getattr(fact, "successor_visibility", None)
    if visibility is None:
        visibility = LegacyFact.objects.filter(pk=fact.superseded_by_id).values_list(
            "visibility", flat=True).first()
    return visibility == LegacyFact.Visibility.SHARED


def facts_filtered(
    *,
    user: AbstractBaseUser,
    legacy: Legacy,
    category: str | None = None,
    visibility: str | None = None,
    mine: bool = False,
    text: str | None = None,
    include_corrected: bool = False,
) -> QuerySet[LegacyFact]:
    """facts_visible_to narrowed by the list filters of the API and the facts page."""
    facts = facts_visible_to(user, legacy, include_corrected=include_corrected)
    if category:
        facts = facts.filter(category=category)
    if visibility:
        facts = facts.filter(visibility=visibility)
    if mine:
        facts = facts.filter(user=user)
    if text and text.strip():
        facts = facts.filter(content__icontains=text.strip())
    return facts


def fact_for_user(*, user: AbstractBaseUser, fact_id: object) -> LegacyFact:
    """A fact the user may see (their own, or a shared one of a legacy they belong to);
    otherwise NotFound, the same as if it did not exist."""
    if not user.is_authenticated:
        raise NotFound()
    fact = (
        LegacyFact.objects.filter(pk=fact_id, legacy__memberships__user=user)
        .filter(Q(user=user) | Q(visibility=LegacyFact.Visibility.SHARED))
        .select_related("user", "legacy")
        .first()
    )
    if fact is None:
        raise NotFound()
    return fact


_FACT_FIELDS = ("id", "legacy_id", "user_id", "category", "content", "visibility")


def _fact(values: list[Any], username: str, authors: dict[int, Any]) -> LegacyFact:
    """A fact from a row [id, legacy_id, user_id, category, content, visibility] of plain SQL
    (the prompt's columns; the others load on access), with its author: one instance per
    author in `authors` (a family of 1,000 facts has a few authors)."""
    values = [UUID(values[0]), UUID(values[1]), *values[2:]]
    fact = LegacyFact.from_db(connection.alias, _FACT_FIELDS, values)
    author = authors.get(values[2])
    if author is None:
        user_model = get_user_model()
        author = authors[values[2]] = user_model.from_db(
            connection.alias, ("id", user_model.USERNAME_FIELD), (values[2], username))
    fact.user = author
    return fact


def _tables() -> dict[str, str]:
    user = get_user_model()
    return {
        "facts": quoted_table(LegacyFact),
        "conflicts": quoted_table(FactConflict),
        "memberships": quoted_table(LegacyMembership),
        "users": quoted_table(user),
        "username": connection.ops.quote_name(
            user._meta.get_field(user.USERNAME_FIELD).column
        ),
    }


# The last column: whether a recorded conflict sets the fact against another current fact the
# user may see too (as conflicts_visible_to shows them: never one of another member's private).
# Two probes of the conflicts' indexes a fact (fact_a_id, fact_b_id), stopping at the first
# such conflict: the cost grows with the facts read and their own conflicts (at most
# FACT_CONFLICTS_PER_FACT_MAX each written), never with the legacy's. Read as one hashed list
# of the legacy's conflicts, it was fast while the list fitted work_mem; past it (two members'
# 1,800 contradicting facts made 410,000 conflicts) PostgreSQL read the list from disk once a
# fact, and every member's packet took 30 seconds (found by a hostile relative).
_DISPUTED = """
(EXISTS (SELECT 1 FROM {conflicts} c JOIN {facts} o ON o.id = c.fact_b_id
         WHERE c.fact_a_id = f.id AND o.superseded_by_id IS NULL
           AND (o.user_id = %(user_id)s OR o.visibility = 'shared'))
 OR EXISTS (SELECT 1 FROM {conflicts} c JOIN {facts} o ON o.id = c.fact_a_id
            WHERE c.fact_b_id = f.id AND o.superseded_by_id IS NULL
              AND (o.user_id = %(user_id)s OR o.visibility = 'shared')))
"""
_VISIBLE_FACTS_SQL = """
SELECT coalesce(json_agg(json_build_array(
         f.id, f.legacy_id, f.user_id, f.category, f.content, f.visibility, u.{username},
         """ + _DISPUTED + """)
         ORDER BY f.extracted_at, f.id), '[]'::json)
FROM {facts} f JOIN {users} u ON u.id = f.user_id
WHERE f.legacy_id = %(legacy_id)s AND (f.user_id = %(user_id)s OR f.visibility = 'shared')
  AND f.superseded_by_id IS NULL
  AND EXISTS (SELECT 1 FROM {memberships} m
              WHERE m.legacy_id = %(legacy_id)s AND m.user_id = %(user_id)s)
"""


def facts_visible_sql() -> str:
    """facts_visible_to(user, legacy) (current facts only, the prompt's) as SQL of one json
    value, for %(user_id)s and %(legacy_id)s: a statement that reads several blocks of the
    prompt at once selects it as a column, and facts_from_json makes the facts."""
    return _VISIBLE_FACTS_SQL.format(**_tables())


def facts_from_json(rows: list[list[Any]]) -> list[LegacyFact]:
    """The facts of facts_visible_sql's value, in its order, each with its author and
    `disputed`: another member's fact the reader may see states another value."""
    facts, authors = [], {}
    for row in rows:
        fact = _fact(row[:6], row[6], authors)
        fact.disputed = bool(row[7])
        facts.append(fact)
    return facts


_CORRECTIONS_SQL = """
WITH RECURSIVE chain AS (
  SELECT f.id AS old_id, f.source_conversation_id, f.source_range_start, f.source_range_end,
         f.extracted_at, n.id, n.legacy_id, n.user_id, n.category, n.content, n.visibility,
         n.superseded_by_id
  FROM {facts} f JOIN {facts} n ON n.id = f.superseded_by_id
  WHERE f.user_id = %(user_id)s AND f.legacy_id = %(legacy_id)s
    AND f.source_conversation_id = ANY(%(conversation_ids)s::uuid[])
  UNION ALL
  SELECT c.old_id, c.source_conversation_id, c.source_range_start, c.source_range_end,
         c.extracted_at, n.id, n.legacy_id, n.user_id, n.category, n.content, n.visibility,
         n.superseded_by_id
  FROM chain c JOIN {facts} n ON n.id = c.superseded_by_id
) CYCLE id SET looped USING path  -- a chain that comes back on itself ends there
SELECT c.old_id, o.legacy_id, o.user_id, o.category, o.content, o.visibility,
       c.source_conversation_id, c.source_range_start, c.source_range_end,
       c.id, c.legacy_id, c.user_id, c.category, c.content, c.visibility
FROM chain c JOIN {facts} o ON o.id = c.old_id
WHERE c.superseded_by_id IS NULL AND NOT c.looped
ORDER BY c.extracted_at, c.old_id
"""


def corrections_said_in(
    *, user: AbstractBaseUser, legacy: Legacy, conversation_ids: Iterable[object]
) -> list[tuple[LegacyFact, LegacyFact]]:
    """(old, current) for each of the user's facts extracted from these conversations that a
    later fact corrected: what an earlier conversation said that is no longer current, and
    what is current now (the end of the correction chain, followed in SQL). One query; the
    old fact comes with its source range, both with the prompt's columns (the others load
    on access), oldest extraction first."""
    ids = [str(pk) for pk in conversation_ids]
    if not ids:
        return []
    with prepared_cursor() as cursor:
        cursor.execute(_CORRECTIONS_SQL.format(**_tables()), {
            "user_id": user.pk, "legacy_id": legacy.pk, "conversation_ids": ids,
        })
        rows = cursor.fetchall()
    pairs = []
    for row in rows:
        old = LegacyFact.from_db(connection.alias, (*_FACT_FIELDS, "source_conversation_id",
                                                    "source_range_start", "source_range_end"),
                                 row[:9])
        pairs.append((old, LegacyFact.from_db(connection.alias, _FACT_FIELDS, row[9:])))
    return pairs


def fact_corrections_visible(
    *, user: AbstractBaseUser, facts: list[LegacyFact]
) -> dict[object, list[LegacyFact]]:
    """For each of `facts`, the facts it corrected (superseded) that `user` may see — the
    author always, a fellow member only a shared one, so a correction shared later never shows
    the family a value the author kept private — oldest first. One query."""
    corrected: dict[object, list[LegacyFact]] = {fact.pk: [] for fact in facts}
    if not facts or not user.is_authenticated:
        return corrected
    for old in (
        LegacyFact.objects.filter(superseded_by__in=[fact.pk for fact in facts])
        .filter(_visible_to(user))
        .order_by("extracted_at", "id")
    ):
        corrected[old.superseded_by_id].append(old)
    return corrected


def conflicts_visible_to(user: AbstractBaseUser, legacy: Legacy) -> QuerySet[FactConflict]:
    """The conflicts (two members' current facts stating different values of one attribute)
    that `user` is shown: those whose two facts `user` may both see now — own or shared — so a
    conflict never tells anyone of another member's private fact. A member whose fact is
    private sees the conflict with a shared fact of someone else; once both are shared, every
    member sees it. Oldest first; nothing unless the user is a member."""
    if not user.is_authenticated or not LegacyMembership.objects.filter(
        legacy=legacy, user=user
    ).exists():
        return FactConflict.objects.none()
    return (
        FactConflict.objects.filter(
            legacy=legacy, fact_a__superseded_by__isnull=True, fact_b__superseded_by__isnull=True
        )
        .filter(_visible_to(user, "fact_a__"))
        .filter(_visible_to(user, "fact_b__"))
        .select_related("fact_a__user", "fact_b__user")
        .order_by("detected_at", "id")
    )


_WORD = re.compile(r"[a-z0-9']{4,}")
_COMMON_WORDS = frozenset([
    "that", "this", "with", "have", "were", "what", "when", "your", "about", "from", "they",
    "them", "there", "their", "would", "could", "like", "just", "some", "said", "know", "been",
    "also", "very", "much", "then", "than", "into", "over", "only", "sorry", "actually",
])


def facts_for_correction(
    *, user: AbstractBaseUser, legacy: Legacy, text: str, limit: int
) -> list[LegacyFact]:
    """The user's own current facts about the legacy that a batch of their conversation may
    correct, at most `limit`: those sharing the most words with `text` (what the batch says)
    first, then the most recently extracted. Their author's, member or not (an archive job
    runs for a conversation whose user has since left). Seed 003's "update over contradict"
    only ever touches the user's own facts."""
    if limit <= 0:
        return []
    words = set(_WORD.findall(text.lower())) - _COMMON_WORDS
    # Ranked on ids and texts only, then only the chosen facts are loaded: an archive job
    # asks once per batch, and an author of a long import has thousands of facts.
    current = (
        LegacyFact.objects.filter(legacy=legacy, user=user, superseded_by__isnull=True)
        .order_by("-extracted_at", "-id").values_list("id", "content")
    )

    def shared_words(row: tuple[object, str]) -> int:
        return len(words & _words_of(row[1]))

    # sorted() is stable: equally relevant facts stay most recent first.
    chosen = [pk for pk, _ in sorted(current, key=shared_words, reverse=True)[:limit]]
    loaded = LegacyFact.objects.in_bulk(chosen)
    return [loaded[pk] for pk in chosen if pk in loaded]


@lru_cache(maxsize=8192)
def _words_of(content: str) -> frozenset[str]:
    """The lower-case words of a fact's text (facts_for_correction reads the same facts for
    every batch of a conversation)."""
    return frozenset(_WORD.findall(content.lower()))


def fact_for_author(*, user: AbstractBaseUser, fact_id: object) -> LegacyFact:
    """A fact the user may change: NotFound as fact_for_user, PermissionDenied when the user
    can see it (a fellow member's shared fact) but is not its author."""
    fact = fact_for_user(user=user, fact_id=fact_id)
    if fact.user_id != user.pk:
        raise PermissionDenied("Only the fact's author can change it.")
    return fact


def fact_label(fact: LegacyFact) -> str:
    """Seed 000's mark of a fact, the one rule of the prompt, the context parts and the chat
    panel: it follows the visibility, whoever the author is."""
    return "shared" if fact.visibility == LegacyFact.Visibility.SHARED else "personal"


# --- The caller's own data (GET /api/me/data) ------------------------------------------------


def user_data_export(user: AbstractBaseUser) -> dict[str, QuerySet]:
    """The user's memberships, every fact they authored and the invitations they sent or
    received, for the export's ExportMembershipSerializer, ExportFactSerializer and
    ExportInvitationSerializer.

    Nothing of anyone else: not the other members of a legacy, not their facts, shared or not
    (an invitation names the one who sent it and the username it was sent to). Three queries,
    whatever the number of rows.
    """
    return {
        "memberships": LegacyMembership.objects.filter(user=user)
        .select_related("legacy")
        .order_by("joined_at", "id"),
        # Received ones from the user's own realm only (invited_within_realm), as listed.
        "invitations": LegacyInvitation.objects.filter(
            Q(invited_by=user) | (Q(invited_user=user) & invited_within_realm(user)))
        .annotate(direction=Case(When(invited_by=user, then=Value("sent")),
                                 default=Value("received")))
        .select_related("legacy", "invited_by")
        .order_by("created_at", "id"),
        "facts": LegacyFact.objects.filter(user=user)
        .select_related("legacy")
        .order_by("extracted_at", "id"),
    }
