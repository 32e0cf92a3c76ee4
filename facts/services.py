"""Writes of legacies, memberships and legacy facts."""

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Case, Model, Q, When
from django.utils import timezone

from facts.models import FactConflict, Legacy, LegacyFact, LegacyInvitation, LegacyMembership
from facts.selectors import invited_within_realm, legacy_heir, realm_of
from memory_site.core import events
from memory_site.core.errors import ApplicationError, Conflict, NotFound
from memory_site.core.language.attributes import contradiction
from memory_site.core.language.names import read_legacy_name, short_forms
from memory_site.core.locks import LockNamespace, hold_row, hold_user
from memory_site.core.sql import quoted_table
from memory_site.core.text import (
    INVISIBLE_MESSAGE,
    NUL_MESSAGE,
    comparison_key,
    has_nul,
    reject_nul,
    visible_text,
)

LEGACY_NAME_MAX_CHARS = 200
# As a family call names people (serializers.NAMED_MAX_CHARS): a platform's external id.
INVITATION_USERNAME_MAX_CHARS = 255


def legacy_create(*, user: AbstractBaseUser, name: str) -> Legacy:
    """Create a legacy; its creator becomes its owner."""
    name = visible_text(name)
    if not name:
        raise ValidationError({"name": ["A legacy needs a name."]})
    if len(name) > LEGACY_NAME_MAX_CHARS:
        raise ValidationError({"name": [f"At most {LEGACY_NAME_MAX_CHARS} characters."]})
    reject_nul(name=name)
    with transaction.atomic():
        legacy = Legacy.objects.create(name=name, created_by=user)
        LegacyMembership.objects.create(legacy=legacy, user=user, role=LegacyMembership.Role.OWNER)
    return legacy


# The caller in the API's member paths (facts.api_urls: members/me is leaving).
ME = "me"
ME_REFUSED = (
    f'"{ME}" stands for the caller in the API\'s member paths (DELETE '
    f"/api/legacies/{{id}}/members/{ME} is leaving): an account of that name could never be "
    "removed by an owner, so it cannot join a family."
)


def legacy_member_add(
    *, legacy: Legacy, added_by: AbstractBaseUser, username: str, role: str
) -> LegacyMembership:
    """The owner adds a user by username. Raises PermissionDenied, ValidationError (an unknown
    username, a bad role), or Conflict when the user is already a member."""
    require_owner(legacy=legacy, user=added_by, action="add members")
    if role not in LegacyMembership.Role.values:
        raise ValidationError({"role": [f"Must be one of: {', '.join(LegacyMembership.Role.values)}."]})
    reject_nul(username=username)
    if username.lower() == ME:
        raise ValidationError({"username": [ME_REFUSED]})
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ValidationError({"username": ["No user has that username."]})
    try:
        with transaction.atomic():
            _, members = _lock_family(legacy, acting=added_by, named=user)
            _require_owner_of(members, user=added_by, action="add members")
            return LegacyMembership.objects.create(legacy=legacy, user=user, role=role)
    except IntegrityError as exc:
        raise Conflict("That user is already a member of this legacy.") from exc


class LastMemberCannotLeave(Conflict):
    """The only member of a legacy cannot leave it: a legacy always has someone to look after
    it. Erasing one's data (DELETE /api/me/data) deletes such a legacy instead."""

    code = "last_member"
    default_message = (
        "You are the only member of this legacy, so you cannot leave it. To remove it and "
        "everything of yours in it, erase your data instead."
    )


@dataclass(frozen=True)
class MembershipLeft:
    """What membership_leave did."""

    facts_made_private: int
    new_owner: AbstractBaseUser | None


def membership_leave(*, legacy: Legacy, user: AbstractBaseUser) -> MembershipLeft:
    """The user leaves the legacy's family (docs/facts.md "Family").

    Their shared facts about it become private (they stay theirs, in their export, but the
    family no longer sees them); if they were its only owner, the longest-standing remaining
    member becomes owner (facts.selectors.legacy_heir), and the legacy's `created_by` moves to
    the longest-standing remaining owner, as user_data_erase does. Their conversations are
    untouched: the conversations app opens them only while their user is a member. Raises
    NotFound if the user is not a member, LastMemberCannotLeave if nobody else is.
    """
    with transaction.atomic():
        legacy, members = _lock_family(legacy, acting=user)
        membership = next((m for m in members if m.user_id == user.pk), None)
        if membership is None:
            raise NotFound()
        return _membership_end(legacy=legacy, membership=membership, members=members)


def membership_remove(
    *, legacy: Legacy, removed_by: AbstractBaseUser, username: str
) -> MembershipLeft:
    """An owner removes a member from the family: the same as that member leaving
    (membership_leave), their facts and conversations included. Removing oneself is leaving.
    Raises PermissionDenied for a caller who is not an owner, NotFound when nobody of that
    username is a member."""
    if username == removed_by.get_username():
        return membership_leave(legacy=legacy, user=removed_by)
    named = get_user_model().objects.filter(username=username).first()
    with transaction.atomic():
        legacy, members = _lock_family(legacy, acting=removed_by, named=named)
        if not any(
            m.user_id == removed_by.pk and m.role == LegacyMembership.Role.OWNER for m in members
        ):
            raise PermissionDenied("Only the legacy's owner can remove members.")
        membership = next((m for m in members if m.user.get_username() == username), None)
        if membership is None:
            raise NotFound("Nobody of that username is a member of this legacy.")
        return _membership_end(legacy=legacy, membership=membership, members=members)


def _lock_family(legacy: Legacy, acting: AbstractBaseUser | None = None,
                 named: AbstractBaseUser | None = None) -> tuple[Legacy, list[LegacyMembership]]:
    """The legacy row, locked, and its members, longest-standing first. The lock serialises
    everyone joining, leaving, being removed or erasing: two last-but-one members leaving at
    once cannot both go and leave the legacy with nobody. FOR NO KEY UPDATE: rows that point
    at the legacy (a fact, a conversation) are still inserted meanwhile, so that a member who
    shares a fact, holding their membership row (_hold_membership), never waits for a leaving
    that waits for them."""
    # The account rows of the acting member and of the one the write names (added, removed,
    # invited) first, in one order, as an erase of their data takes its own first: an owner
    # removing a member who is erasing waited for the legacy the erase was waiting for.
    for user_id in sorted({user.pk for user in (acting, named) if user is not None}):
        hold_user(user_id)
    try:
        legacy = Legacy.objects.select_for_update(no_key=True).get(pk=legacy.pk)
    except Legacy.DoesNotExist:
        raise NotFound() from None
    members = list(
        LegacyMembership.objects.filter(legacy=legacy)
        .select_related("user")
        .order_by("joined_at", "id")
    )
    return legacy, members


def _hold_membership(*, legacy_id: object, user_id: object) -> bool:
    """Whether the user is a member of the legacy, their membership row held (FOR KEY SHARE)
    until the transaction ends. Call before making a fact shared: their leaving or removal
    deletes that row first (_membership_end), so it waits for the sharing transaction to
    commit and then makes the fact private, and a sharing that comes after it finds no row."""
    # The user's and the legacy's rows first, as their erase locks them (user, legacy, then
    # the membership it deletes): the new fact's foreign keys hold these rows anyway, and
    # taken after the membership they waited for an erase that waited for it. A legacy gone
    # (its last member's erase deleted it) holds no membership either.
    hold_user(user_id)
    if not hold_row(Legacy, legacy_id):
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {quoted_table(LegacyMembership)} WHERE legacy_id = %s "
            "AND user_id = %s FOR KEY SHARE", [legacy_id, user_id],
        )
        return cursor.fetchone() is not None


def _hand_on(
    *, legacy: Legacy, leaver_id: object, leaver_role: str | None,
    others: list[LegacyMembership],
) -> tuple[LegacyMembership | None, bool]:
    """The legacy passes on when someone goes (others: who stays, longest-standing first): an
    only owner's role to the heir (selectors.legacy_heir), and `created_by` (a PROTECT key) to
    the longest-standing remaining owner. Returns the new owner, if any, and whether anything
    was handed on. Call with the legacy row locked."""
    heir = legacy_heir(role=leaver_role, others=others)
    if heir is not None:
        heir.role = LegacyMembership.Role.OWNER
        heir.save(update_fields=["role"])
    moved = legacy.created_by_id == leaver_id
    if moved:
        owners = [m for m in others if m.role == LegacyMembership.Role.OWNER]
        legacy.created_by_id = (owners or others)[0].user_id
        legacy.save(update_fields=["created_by"])
    return heir, heir is not None or moved


def _membership_end(
    *, legacy: Legacy, membership: LegacyMembership, members: list[LegacyMembership]
) -> MembershipLeft:
    """The membership goes, by leaving or removal; call inside _lock_family's transaction."""
    others = [m for m in members if m.pk != membership.pk]
    if not others:
        raise LastMemberCannotLeave()
    heir, _ = _hand_on(legacy=legacy, leaver_id=membership.user_id, leaver_role=membership.role,
                       others=others)
    # The row goes first: a transaction sharing one of their facts holds it (_hold_membership),
    # so the delete waits for that to commit, and the update below then sees the fact.
    membership.delete()
    made_private = LegacyFact.objects.filter(
        legacy=legacy, user_id=membership.user_id, visibility=LegacyFact.Visibility.SHARED
    ).update(visibility=LegacyFact.Visibility.PRIVATE, updated_at=timezone.now())
    # What they asked for as an owner goes with them: an invitation they sent, accepted after
    # their removal, would let them (or whoever they invited) back in.
    LegacyInvitation.objects.filter(
        legacy=legacy, invited_by_id=membership.user_id, status=LegacyInvitation.Status.PENDING
    ).delete()
    return MembershipLeft(
        facts_made_private=made_private, new_owner=heir.user if heir is not None else None
    )


# --- Invitations (docs/facts.md "Invitations") ------------------------------------------------


class AlreadyMember(Conflict):
    code = "already_member"
    default_message = "That user is already a member of this legacy."


class AlreadyInvited(Conflict):
    code = "already_invited"
    default_message = "That username already has a pending invitation to this legacy."


class InvitationRequired(ApplicationError):
    """A person's credentials (a session, an API token) cannot add someone to a family
    without that person's consent: they invite them instead."""

    code = "invitation_required"
    status = 403
    default_message = (
        "People join a family by accepting an invitation: invite them with "
        "POST /api/legacies/{id}/invitations. Only a platform integration adds its own users "
        "directly."
    )


class InvitationAnswered(Conflict):
    code = "invitation_answered"
    default_message = "This invitation has already been answered."


def require_owner(*, legacy: Legacy, user: AbstractBaseUser, action: str) -> None:
    """PermissionDenied unless `user` owns `legacy` (the services check it again under the
    family lock)."""
    if not LegacyMembership.objects.filter(
        legacy=legacy, user=user, role=LegacyMembership.Role.OWNER
    ).exists():
        raise PermissionDenied(f"Only the legacy's owner can {action}.")


def _require_owner_of(
    members: list[LegacyMembership], *, user: AbstractBaseUser, action: str
) -> None:
    """require_owner on the members _lock_family read: still an owner once the family is
    locked (not removed while the request came in)."""
    if not any(m.user_id == user.pk and m.role == LegacyMembership.Role.OWNER for m in members):
        raise PermissionDenied(f"Only the legacy's owner can {action}.")


def invitation_create(
    *, legacy: Legacy, invited_by: AbstractBaseUser, username: str, role: str
) -> LegacyInvitation:
    """An owner invites someone by username. Whether an account of that name exists is not
    told: an unknown username gets a pending invitation too, one nobody can answer, and so
    does an account of another realm (selectors.realm_of).
    Raises PermissionDenied (not an owner), ValidationError (a bad role or username),
    AlreadyMember (also for oneself), AlreadyInvited."""
    require_owner(legacy=legacy, user=invited_by, action="invite people")
    username = (username or "").strip()
    errors: dict[str, list[str]] = {}
    if not username:
        errors["username"] = ["Give the username of the person to invite."]
    elif len(username) > INVITATION_USERNAME_MAX_CHARS:
        errors["username"] = [f"At most {INVITATION_USERNAME_MAX_CHARS} characters."]
    elif username.lower() == ME:
        errors["username"] = [ME_REFUSED]
    if role not in LegacyMembership.Role.values:
        errors["role"] = [f"Must be one of: {', '.join(LegacyMembership.Role.values)}."]
    if errors:
        raise ValidationError(errors)
    if username == invited_by.get_username():
        # A state, not a malformed input: the schema cannot know who the caller is.
        raise AlreadyMember("You are already a member: you cannot invite yourself.")
    reject_nul(username=username)
    invitee = get_user_model().objects.filter(username=username).first()
    with transaction.atomic():
        legacy, members = _lock_family(legacy, acting=invited_by, named=invitee)
        _require_owner_of(members, user=invited_by, action="invite people")
        if any(m.user.get_username() == username for m in members):
            raise AlreadyMember()
        if legacy.invitations.filter(
            username=username, status=LegacyInvitation.Status.PENDING
        ).exists():
            raise AlreadyInvited()
        if invitee is not None and realm_of(invitee) != realm_of(invited_by):
            invitee = None  # as good as unknown: nobody can answer it
        return LegacyInvitation.objects.create(
            legacy=legacy, username=username, invited_user=invitee, invited_by=invited_by,
            role=role,
        )


def invitation_sent_message(invitation: LegacyInvitation) -> str:
    """What the owner is told, the same whether an account of that name exists or not."""
    return (
        f"If {invitation.username} has an account, they can now accept or decline the "
        f"invitation to {invitation.legacy.name}'s family."
    )


def _lock_pending_invitation(
    *, invitation: LegacyInvitation, user: AbstractBaseUser
) -> tuple[Legacy, list[LegacyMembership], LegacyInvitation]:
    """The legacy (locked first, the order of every family write), its members, and the
    user's invitation, locked and still pending; NotFound once the legacy or the invitation
    is gone, InvitationAnswered once it has been answered."""
    legacy, members = _lock_family(invitation.legacy)
    invitation = (
        LegacyInvitation.objects.select_for_update(of=("self",))
        .filter(invited_within_realm(user), pk=invitation.pk, invited_user=user)
        .first()
    )
    if invitation is None:
        raise NotFound()
    if invitation.status != LegacyInvitation.Status.PENDING:
        raise InvitationAnswered()
    return legacy, members, invitation


def invitation_accept(*, invitation: LegacyInvitation, user: AbstractBaseUser) -> LegacyMembership:
    """The invitee accepts: they join the family with the invitation's role. Raises NotFound
    (not theirs, or the legacy is gone, or erased with the invitee's data meanwhile) or
    InvitationAnswered."""
    with transaction.atomic():
        hold_user(user.pk)  # before the legacy: the order of an erase of the invitee's data
        legacy, members, invitation = _lock_pending_invitation(invitation=invitation, user=user)
        membership = next((m for m in members if m.user_id == user.pk), None)
        # A platform may have added them meanwhile: then the invitation is only spent.
        if membership is None:
            membership = LegacyMembership.objects.create(
                legacy=legacy, user=user, role=invitation.role
            )
        invitation.status = LegacyInvitation.Status.ACCEPTED
        invitation.answered_at = timezone.now()
        invitation.save(update_fields=["status", "answered_at"])
    return membership


def invitation_decline(*, invitation: LegacyInvitation, user: AbstractBaseUser) -> LegacyInvitation:
    """The invitee declines; the owner may invite them again later."""
    with transaction.atomic():
        hold_user(user.pk)  # before the legacy, as invitation_accept: an erase's order
        _, _, invitation = _lock_pending_invitation(invitation=invitation, user=user)
        invitation.status = LegacyInvitation.Status.DECLINED
        invitation.answered_at = timezone.now()
        invitation.save(update_fields=["status", "answered_at"])
    return invitation


def invitation_withdraw(
    *, legacy: Legacy, withdrawn_by: AbstractBaseUser, invitation_id: object
) -> None:
    """An owner withdraws a pending invitation of the legacy (the row goes). Raises
    PermissionDenied (not an owner) or NotFound."""
    require_owner(legacy=legacy, user=withdrawn_by, action="withdraw invitations")
    with transaction.atomic():
        _, members = _lock_family(legacy, acting=withdrawn_by)
        _require_owner_of(members, user=withdrawn_by, action="withdraw invitations")
        try:
            deleted, _ = LegacyInvitation.objects.filter(
                pk=invitation_id, legacy=legacy, status=LegacyInvitation.Status.PENDING
            ).delete()
        except (ValidationError, ValueError):
            raise NotFound() from None
        if not deleted:
            raise NotFound()


def normalize_fact_text(content: str) -> str:
    """The key of exact duplicates: the text in comparison_key's form (case, full-width letters
    and invisible characters make no other text), punctuation dropped, whitespace folded.
    Symbols stay: "Mae: +1" is not "Mae: -1", nor "❤❤❤" "🎂🎂🎂"."""
    key = comparison_key(content)
    return " ".join("".join(
        " " if unicodedata.category(char)[0] in "PZC" else char for char in key
    ).split())


# What a person adding a fact they already have is told (the facts page and the API).
DUPLICATE_MESSAGE = "You already have this fact; nothing was added."


def _fold_whitespace(content: str) -> str:
    """The text whose length the rules count, as the API's schema counts it (whitespace folded:
    memory_site.core.strict.folded_length_pattern). It is stored as visible_text."""
    return " ".join(content.split())


def _validate_fact_fields(
    *, category: str | None = None, content: str | None = None, visibility: str | None = None
) -> None:
    """The rules of a fact's fields, for the fields given (None: not being set), with every
    broken rule in one ValidationError. `content` is checked as given: fold it first."""
    errors: dict[str, list[str]] = {}
    if category is not None and category not in LegacyFact.Category.values:
        errors["category"] = [f"Must be one of: {', '.join(LegacyFact.Category.values)}."]
    if content is not None and not (
        settings.FACT_MIN_CHARS <= len(content) <= settings.FACT_MAX_CHARS
    ):
        errors["content"] = [
            f"Must be {settings.FACT_MIN_CHARS}–{settings.FACT_MAX_CHARS} characters."
        ]
    elif has_nul(content):
        errors["content"] = [NUL_MESSAGE]
    elif content is not None and not visible_text(content):
        errors["content"] = [INVISIBLE_MESSAGE]
    if visibility is not None and visibility not in LegacyFact.Visibility.values:
        errors["visibility"] = ["Must be private or shared."]
    if errors:
        raise ValidationError(errors)


def _lock_author_facts(*, legacy_id: object, user_id: object) -> None:
    """Until the transaction ends, be the only writer of one author's facts about a legacy, so
    that a duplicate check and the write after it are one step for racing writers (two archive
    jobs of the same author, a fact added by hand during an extraction)."""
    # An advisory lock rather than a lock on the membership row: it also serialises authors
    # who have left the legacy, and holds no row lock that could deadlock with a writer that
    # locks the legacy row and then deletes its memberships. The author's account row first,
    # shared: an erase of their data locks it before anything else (hold_user).
    hold_user(user_id)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
            [LockNamespace.FACT_AUTHOR.value, f"{legacy_id}:{user_id}"],
        )


_UNITS_AND_TEENS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen",
)
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_NUMBER_WORDS = (
    {word: value for value, word in enumerate(_UNITS_AND_TEENS)}
    | {word: 10 * (i + 2) for i, word in enumerate(_TENS)}
    | {"oh": 0}
)
_ORDINAL_WORDS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12,
}
_SCALE_WORDS = {"hundred": 100, "thousand": 1000}
_MONTHS = re.compile(
    r"\b(January|February|March|April|May|June|July|August|September|October|November|"
    r"December)\b"
)


def _written_number(words: list[str]) -> int:
    """The value of a run of number words: "thirty one" → 31, "nineteen fifty five" → 1955
    (a year said in two pairs), "two thousand and five" → 2005."""
    if "hundred" not in words and "thousand" not in words:
        pairs: list[int] = []
        for word in words:
            value = _NUMBER_WORDS[word]
            if pairs and pairs[-1] >= 20 and pairs[-1] % 10 == 0 and 0 < value < 10:
                pairs[-1] += value  # "fifty five"
            elif pairs and pairs[-1] == 0 and words[0] != "zero" and value < 10:
                pairs[-1] = value  # "nineteen oh five"
            else:
                pairs.append(value)
        if len(pairs) == 2 and 10 <= pairs[0] <= 99:
            return pairs[0] * 100 + pairs[1]
        return int("".join(str(p) for p in pairs))
    total = current = 0
    for word in words:
        if word == "thousand":
            total, current = total + max(current, 1) * 1000, 0
        elif word == "hundred":
            current = max(current, 1) * 100
        elif word != "and":
            current += _NUMBER_WORDS[word]
    return total + current


# Each write compares a fact with every current fact of its author (and _record_conflicts with
# every other member's), always in the same order: a cache smaller than the facts is thrown
# out entry by entry before any is used again (at 8,192, an author of 8,500 facts had no hit
# at all, and a fact's check went from 16 to 160 ms). This many texts compare from cache; past
# it, every comparison reads the texts again. A text's words take a few kB (about 7.5 kB for
# 500 characters), so up to about 120 MB a process with facts of the longest kind, 20 MB with
# usual ones.
FACT_TEXT_CACHE_SIZE = 16384


@lru_cache(maxsize=FACT_TEXT_CACHE_SIZE)
def fact_values(content: str) -> frozenset[str]:
    """The numbers, years and months a fact states, however written: "1955" and "nineteen
    fifty-five" are one value, "her first job" states 1, "3rd" and "three" are 3. Cached by
    text: fact_find_duplicate compares each new fact with the same facts batch after batch."""
    values = {month.lower() for month in _MONTHS.findall(content)}
    text = normalize_fact_text(re.sub(r"(?<=\d),(?=\d{3}\b)", "", content))
    run: list[str] = []
    for token in [*text.split(), ""]:
        # "and" and "oh" are numbers only inside one: "two thousand and five", "nineteen oh five".
        joins = bool(run) and (token == "oh" or (token == "and" and run[-1] in _SCALE_WORDS))
        if (token in _NUMBER_WORDS and token != "oh") or token in _SCALE_WORDS or joins:
            run.append(token)
            continue
        if run:
            while run[-1] == "and":
                run.pop()
            values.add(str(_written_number(run)))
            run = []
        if token in _ORDINAL_WORDS:
            values.add(str(_ORDINAL_WORDS[token]))
        values.update(str(int(digits)) for digits in re.findall(r"\d+", token))
    return frozenset(values)


def fact_find_duplicate(
    *, legacy: Legacy, user: AbstractBaseUser, content: str, exclude: LegacyFact | None = None,
    person_names: Sequence[str] = (),
) -> LegacyFact | None:
    """The user's current fact about this legacy that `content` duplicates, if any.

    The rule (docs/facts.md): the same text once case, punctuation and spacing are
    ignored; or a near duplicate, whose word sets overlap with a Jaccard similarity of
    at least FACT_DEDUP_SIMILARITY (default 0.8) and which states the same numbers, years
    and months (`fact_values`): a corrected year is a new fact, not a duplicate.
    Categories are ignored: the same statement filed under two categories is still one fact.
    """
    key, words, tail = _dedup_words(content)
    values = fact_values(content)
    # The tail rule below holds only between two of the person's names (the legacy's, their
    # short forms, and `person_names`: what the author's conversation calls them): "Harold
    # worked at the wool mill" is no duplicate of "Rose worked at the wool mill" (found by a
    # hostile relative).
    names = _person_names(legacy.name, tuple(person_names))
    tail = _after_name(key, tail, names)
    threshold = settings.FACT_DEDUP_SIMILARITY
    # Only current facts: saying a value again that a correction replaced is a new fact (which
    # may correct the correction), not a duplicate of the history.
    candidates = LegacyFact.objects.filter(legacy=legacy, user=user, superseded_by__isnull=True)
    if exclude is not None:
        candidates = candidates.exclude(pk=exclude.pk)
    # Ids and texts only, in the facts' order; the texts' keys, word sets and values are
    # cached by text (an archive compares each new fact with the same facts batch after
    # batch), and only the duplicate found is loaded.
    for pk, other_content in candidates.values_list("pk", "content"):
        other_key, other, other_tail = _dedup_words(other_content)
        if other_key == key:
            return LegacyFact.objects.get(pk=pk)
        if (
            (_jaccard(words, other) >= threshold
             # The person named otherwise ("Freda loved brass band music" and "Winifred
             # loved …": the name the family calls them by, learnt later): what follows the
             # name is the same (found by a live check).
             or (len(tail) >= 3
                 and _jaccard(tail, _after_name(other_key, other_tail, names)) >= threshold))
            and fact_values(other_content) == values
        ):
            return LegacyFact.objects.get(pk=pk)
    return None


@lru_cache(maxsize=256)
def _person_names(legacy_name: str, extra: tuple[str, ...]) -> frozenset[str]:
    """The one-word names of the person, as the duplicate key writes them (lower case)."""
    read = read_legacy_name(legacy_name)
    every = [*read.names, *read.aliases, *short_forms([read.display, *read.aliases]), *extra]
    return frozenset(normalize_fact_text(name) for name in every
                     if name.strip() and " " not in name.strip())


def _after_name(key: str, tail: frozenset[str], names: frozenset[str]) -> frozenset[str]:
    """`tail` (the words after a text's first) when its first word is one of `names`."""
    return tail if key.split(" ", 1)[0] in names else frozenset()


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


@lru_cache(maxsize=FACT_TEXT_CACHE_SIZE)
def _dedup_words(content: str) -> tuple[str, frozenset[str], frozenset[str]]:
    """A text's duplicate key (`normalize_fact_text`), the set of its words and the set of
    the words after its first (its subject, when that is a name: _after_name)."""
    key = normalize_fact_text(content)
    words = key.split()
    return key, frozenset(words), frozenset(words[1:])


def fact_create(
    *,
    legacy: Legacy,
    user: AbstractBaseUser,
    category: str,
    content: str,
    visibility: str = LegacyFact.Visibility.PRIVATE,
    # A conversation of the author's, passed in by the app above (facts never imports it).
    source_conversation: Model | None = None,
    source_range: tuple[int, int] | None = None,
    as_member: bool = False,
    person_names: Sequence[str] = (),
) -> tuple[LegacyFact, bool]:
    """Save a fact for (legacy, user) unless it duplicates one of theirs.

    Returns (fact, created); on a duplicate, (the existing fact, False) and nothing is
    written. Used by the extraction pipeline and by people adding facts by hand. Call
    it inside the caller's transaction when the fact is part of a larger write.

    `as_member` (a fact added by hand): the author must be a member when it is written,
    checked under the locks; NotFound otherwise (they left, were removed or erased their data
    since the request read the legacy, or the legacy went with it). A shared fact always is.
    The pipeline's facts need not: a member who left keeps what their conversations said.
    """
    content = _fold_whitespace(content or "")
    _validate_fact_fields(category=category, content=content, visibility=visibility)
    content = visible_text(content)  # stored as a reader sees it
    with transaction.atomic():
        _lock_author_facts(legacy_id=legacy.pk, user_id=user.pk)
        _lock_conflict_checks(legacy.pk)
        if (as_member or visibility == LegacyFact.Visibility.SHARED) and not _hold_membership(
            legacy_id=legacy.pk, user_id=user.pk
        ):
            raise NotFound()  # only a member shares (they left, or were removed, meanwhile)
        duplicate = fact_find_duplicate(legacy=legacy, user=user, content=content,
                                        person_names=person_names)
        if duplicate is not None:
            return duplicate, False
        start, end = source_range if source_range else (None, None)
        fact = LegacyFact.objects.create(
            legacy=legacy,
            user=user,
            category=category,
            content=content,
            visibility=visibility,
            source_conversation=source_conversation,
            source_range_start=start,
            source_range_end=end,
        )
        _record_conflicts(fact)
    return fact, True


def _locked_fact(pk: object) -> LegacyFact:
    """The fact's row, locked; NotFound when it was deleted since the caller read it (an edit
    racing a delete of the same fact)."""
    fact = LegacyFact.objects.select_for_update().filter(pk=pk).first()
    if fact is None:
        raise NotFound()
    return fact


def _require_author(*, fact: LegacyFact, user: AbstractBaseUser) -> None:
    # Callers reach a fact through facts.selectors.fact_for_user, so a fellow member only
    # gets here for a shared fact: for them the fact exists but is not theirs to change.
    if fact.user_id != user.pk:
        raise PermissionDenied("Only the fact's author can change it.")


def fact_update(
    *,
    fact: LegacyFact,
    user: AbstractBaseUser,
    content: str | None = None,
    category: str | None = None,
) -> LegacyFact:
    """The author edits a fact's content and/or category.

    New content must not duplicate another of the author's facts (the rule of
    fact_create); raises PermissionDenied for anyone but the author, ValidationError
    for bad input, and writes nothing in either case.
    """
    _require_author(fact=fact, user=user)
    if content is None and category is None:
        return fact  # a PATCH without fields changes nothing (the schema requires none)
    if content is not None:
        content = _fold_whitespace(content)
    _validate_fact_fields(category=category, content=content)
    if content is not None:
        content = visible_text(content)  # stored as a reader sees it
    with transaction.atomic():
        _lock_author_facts(legacy_id=fact.legacy_id, user_id=user.pk)
        _lock_conflict_checks(fact.legacy_id)
        fact = _locked_fact(fact.pk)
        fields = ["updated_at"]
        if content is not None and content != fact.content:
            duplicate = fact_find_duplicate(legacy=fact.legacy, user=user, content=content,
                                            exclude=fact)
            if duplicate is not None:
                raise ValidationError(
                    {"content": ["That duplicates another of your facts about this legacy."]}
                )
            fact.content = content
            fields.append("content")
            # Edited, the text is the author's own: undoing the correction keeps it.
            fact.created_as_correction = False
            fields.append("created_as_correction")
        if category is not None:
            fact.category = category
            fields.append("category")
        fact.save(update_fields=fields)
        if "content" in fields:
            FactConflict.objects.filter(Q(fact_a=fact) | Q(fact_b=fact)).delete()
            _record_conflicts(fact)
    return fact


def fact_set_visibility(
    *, fact: LegacyFact, user: AbstractBaseUser, visibility: str
) -> LegacyFact:
    """The author shares a fact with every member of the legacy, or makes it private again."""
    _require_author(fact=fact, user=user)
    _validate_fact_fields(visibility=visibility)
    with transaction.atomic():
        hold_user(user.pk)  # first, as an erase of the author's data locks it first
        sharing = visibility == LegacyFact.Visibility.SHARED
        if sharing and not _hold_membership(legacy_id=fact.legacy_id, user_id=user.pk):
            raise NotFound()  # only a member shares (they left, or were removed, meanwhile)
        if sharing:
            _lock_conflict_checks(fact.legacy_id)  # before the fact's row, as fact_update
        fact = _locked_fact(fact.pk)
        if fact.visibility != visibility:
            fact.visibility = visibility
            # The author's own choice from now on: an undo of the correction leaves it be.
            fact.shared_by_correction = False
            fact.save(update_fields=["visibility", "shared_by_correction", "updated_at"])
            if sharing:
                # Shared, its conflicts are checked again: the cap on the conflicts a fact
                # records (shared facts first) could have been spent on the author's private
                # facts when the other was written, and the dispute stayed hidden from the
                # family once this one was shared (found by a hostile relative).
                _record_conflicts(fact)
    return fact


def fact_delete(*, fact: LegacyFact, user: AbstractBaseUser) -> None:
    """The author deletes a fact; nobody else can. Deleting a correction is undoing it: the
    fact it corrected is current again (see _unlink_history)."""
    _require_author(fact=fact, user=user)
    with transaction.atomic():
        _lock_author_facts(legacy_id=fact.legacy_id, user_id=user.pk)
        # A writer recording a conflict with this fact has read it: it finishes first, or its
        # conflict's foreign key would find the fact gone (_record_conflicts).
        _lock_conflict_checks(fact.legacy_id)
        if not LegacyFact.objects.filter(pk=fact.pk).exists():
            # Read before the locks, deleted meanwhile by another request (a delete or an
            # undo of the same fact): that one deleted it, this one did not (found by a hostile
            # relative: eight deletes at once all answered 204).
            raise NotFound("No such fact: it was deleted meanwhile.")
        _unlink_history([fact.pk])
        LegacyFact.objects.filter(pk=fact.pk).delete()


def facts_release_conversation(
    *, conversation: Model, user: AbstractBaseUser, keep: bool
) -> int:
    """The facts `user` took from a conversation that is being deleted (passed in by the app
    above, as its row): deleted, or with `keep` kept as facts of their own with the source
    and its message range cleared. Other authors' facts are never touched (their link is
    cleared by the foreign key's SET NULL). Returns how many were deleted or kept."""
    facts = LegacyFact.objects.filter(source_conversation=conversation, user=user)
    with transaction.atomic():
        if keep:
            return facts.update(
                source_conversation=None, source_range_start=None, source_range_end=None,
                updated_at=timezone.now(),
            )
        _lock_conflict_checks(conversation.legacy_id)  # as fact_delete
        _unlink_history(list(facts.values_list("pk", flat=True)))
        _, deleted = facts.delete()
    return deleted.get(LegacyFact._meta.label, 0)


# --- The lifecycle: corrections and conflicts (docs/facts.md "Corrections") -----------------


class NotACorrection(Conflict):
    code = "not_a_correction"
    default_message = "This fact did not correct another one: there is nothing to undo."


class CorrectionCorrected(Conflict):
    code = "correction_corrected"
    default_message = (
        "This correction has been corrected again since: undo the later correction first."
    )


def _current_head(fact: LegacyFact) -> LegacyFact:
    """The current fact at the end of `fact`'s chain of corrections (`fact` itself when it is
    current), its row locked. Call with the author's facts locked (_lock_author_facts)."""
    seen = set()
    while fact.superseded_by_id is not None and fact.pk not in seen:
        seen.add(fact.pk)
        fact = LegacyFact.objects.select_for_update().get(pk=fact.superseded_by_id)
    return fact


def fact_supersede(
    *, old: LegacyFact, new: LegacyFact, new_created: bool = True
) -> LegacyFact | None:
    """`new` corrects `old`, a fact of the same author about the same legacy: `old` stops being
    current and points at `new`; both rows stay. Returns the fact that was superseded, or None
    when nothing changed (`new` already replaces it: the call is idempotent). `new_created`:
    `new` was made for this correction (the extraction that found the correction created it),
    and undoing the correction deletes it; a fact the author had stated before, and that the
    correction found again, is marked so and kept by an undo.

    Racing corrections leave one current fact: under the author's lock, a correction of a fact
    that was corrected meanwhile corrects the fact that replaced it (the current end of the
    chain), never the history. A correction of a shared fact is shared too (the author shared
    that statement with the family; the correction replaces it there). Another member's fact
    is never superseded (PermissionDenied): a contradiction across members is a conflict
    (_record_conflicts). Emits `fact.superseded`.
    """
    if old.user_id != new.user_id:
        raise PermissionDenied("A fact is only corrected by its own author.")
    if old.legacy_id != new.legacy_id:
        raise ValidationError({"fact": ["A fact is only corrected by a fact of its legacy."]})
    with transaction.atomic():
        _lock_author_facts(legacy_id=new.legacy_id, user_id=new.user_id)
        # As fact_create: the replacement may become shared and check its conflicts again.
        _lock_conflict_checks(new.legacy_id)
        # Before any fact row is locked: a leaving deletes the membership and then locks the
        # leaver's shared facts, so the two never wait for each other.
        member = _hold_membership(legacy_id=new.legacy_id, user_id=new.user_id)
        try:
            old = LegacyFact.objects.select_for_update().get(pk=old.pk)
            new = LegacyFact.objects.select_for_update().get(pk=new.pk)
        except LegacyFact.DoesNotExist:
            return None  # deleted meanwhile: nothing is left to correct, or to correct it with
        target, replacement = _current_head(old), _current_head(new)
        if target.pk == replacement.pk:
            return None
        now = timezone.now()
        # .update(): the corrected fact keeps every field as it was, `updated_at` included, so
        # that undoing the correction restores it exactly.
        LegacyFact.objects.filter(pk=target.pk).update(superseded_by=replacement, superseded_at=now)
        target.superseded_by, target.superseded_at = replacement, now
        if replacement.pk == new.pk and new_created != new.created_as_correction:
            # Only a fact made for this correction goes with its undo: a fact stated before,
            # or made by one correction and found again by another, keeps its own life.
            LegacyFact.objects.filter(pk=new.pk).update(created_as_correction=new_created)
            replacement.created_as_correction = new_created
        if (
            target.visibility == LegacyFact.Visibility.SHARED
            and replacement.visibility != LegacyFact.Visibility.SHARED
            and member  # a correction of a shared fact is shared only by a member
        ):
            replacement.visibility = LegacyFact.Visibility.SHARED
            # Private again if the correction is undone and the fact stays (fact_correction_undo:
            # one stated before, or edited since; one made for the correction goes with it).
            replacement.shared_by_correction = True
            replacement.save(update_fields=["visibility", "shared_by_correction", "updated_at"])
            _record_conflicts(replacement)  # shared now: as fact_set_visibility (a review)
        events.publish(events.FACT_SUPERSEDED, user_id=replacement.user_id, data={
            "legacy_id": str(replacement.legacy_id),
            "fact_id": str(target.pk),
            "superseded_by": str(replacement.pk),
            "conversation_id": (
                str(replacement.source_conversation_id)
                if replacement.source_conversation_id else None
            ),
            "message_range": (
                [replacement.source_range_start, replacement.source_range_end]
                if replacement.source_range_start is not None else None
            ),
        })
    return target


@dataclass(frozen=True)
class CorrectionUndone:
    restored: list[LegacyFact]
    removed: bool  # the correction was deleted; False: it was stated before, and stays current


def fact_correction_undo(*, fact: LegacyFact, user: AbstractBaseUser) -> CorrectionUndone:
    """The author undoes the correction `fact` made: the fact(s) it superseded are current
    again exactly as they were (content, category, visibility, source, timestamps: the
    supersede never changed them), and `fact`, the correction, is deleted when it was made for
    a correction (`created_as_correction`); a fact the author had stated before the correction
    found it again stays, current, private again if the correction shared it
    (`shared_by_correction`). PermissionDenied for anyone but the author;
    NotACorrection when `fact` corrected nothing, CorrectionCorrected when `fact` is itself
    corrected (undo the later correction first)."""
    _require_author(fact=fact, user=user)
    with transaction.atomic():
        _lock_author_facts(legacy_id=fact.legacy_id, user_id=user.pk)
        _lock_conflict_checks(fact.legacy_id)  # it may delete the correction: as fact_delete
        fact = _locked_fact(fact.pk)
        restored = list(
            LegacyFact.objects.select_for_update().filter(superseded_by=fact).order_by(
                "extracted_at", "id")
        )
        if not restored:
            raise NotACorrection()
        if fact.superseded_by_id is not None:
            raise CorrectionCorrected()
        # A corrected value the author has said again since is current already: the old row
        # stays history, of that fact, rather than a second current copy of it.
        said_again = set()
        for old in restored:
            again = fact_find_duplicate(legacy=fact.legacy, user=user, content=old.content,
                                        exclude=fact)
            if again is not None:
                said_again.add(old.pk)
                LegacyFact.objects.filter(pk=old.pk).update(superseded_by=again)
        restored = [old for old in restored if old.pk not in said_again]
        LegacyFact.objects.filter(pk__in=[f.pk for f in restored]).update(
            superseded_by=None, superseded_at=None
        )
        if fact.created_as_correction:
            fact.delete()
        elif fact.shared_by_correction:
            # The author had kept it private: the family sees what it saw before the correction.
            LegacyFact.objects.filter(pk=fact.pk).update(
                visibility=LegacyFact.Visibility.PRIVATE, shared_by_correction=False)
    for old in restored:
        old.superseded_by, old.superseded_at = None, None
    return CorrectionUndone(restored=restored, removed=fact.created_as_correction)


def _unlink_history(deleted_ids: list[object]) -> None:
    """Before facts are deleted: the facts they corrected point at what replaced the deleted
    ones (a deleted fact in the middle of a chain), or are current again (a deleted current
    correction: deleting a correction undoes it)."""
    if not deleted_ids:
        return
    deleted = set(deleted_ids)
    next_of = dict(
        LegacyFact.objects.filter(pk__in=deleted).values_list("pk", "superseded_by_id")
    )

    def survivor(pk: object) -> object | None:
        seen = set()
        while pk in deleted and pk not in seen:
            seen.add(pk)
            pk = next_of.get(pk)
        return None if pk in deleted else pk

    orphans = LegacyFact.objects.filter(superseded_by__in=deleted).exclude(pk__in=deleted)
    for orphan_id, superseded_by in orphans.values_list("pk", "superseded_by_id"):
        target = survivor(superseded_by)
        fields = {"superseded_by_id": target} if target else {
            "superseded_by_id": None, "superseded_at": None}
        LegacyFact.objects.filter(pk=orphan_id).update(**fields)


def _lock_conflict_checks(legacy_id: object) -> None:
    """Until the transaction ends, be the only writer of the legacy recording conflicts
    (_record_conflicts). Take it right after the author's lock and before any fact row is
    locked: a conflict row it writes holds (by its foreign keys) the other facts' rows, so a
    writer that locked one of them and then waited here would wait for a writer waiting for
    it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                       [LockNamespace.FACT_CONFLICTS.value, str(legacy_id)])


def _record_conflicts(fact: LegacyFact) -> None:
    """Record a conflict between `fact` and each current fact of another member of its legacy
    that states one of its single-valued attributes with a different value
    (memory_site.core.language.attributes). Nothing is superseded, whatever the visibility:
    who is shown a conflict is decided when it is read (selectors.conflicts_visible_to).

    Call inside the transaction that wrote `fact`, holding _lock_conflict_checks (taken again
    here: a lock held already). The writers of a legacy take turns there until they commit, so
    that of two members stating contradicting values at once, the later reads the earlier's
    fact; without turns, each read the other's facts before they were committed and neither
    saw the conflict."""
    _lock_conflict_checks(fact.legacy_id)
    # Shared facts first: a conflict every member may see is not left out for private ones.
    others = LegacyFact.objects.filter(
        legacy_id=fact.legacy_id, superseded_by__isnull=True
    ).exclude(user_id=fact.user_id).only("id", "user_id", "content").order_by(
        Case(When(visibility=LegacyFact.Visibility.SHARED, then=0), default=1),
        "extracted_at", "id")
    conflicts = []
    per_author: Counter = Counter()
    for other in others:
        if per_author[other.user_id] >= settings.FACT_CONFLICTS_PER_FACT_MAX:
            # Enough to show the fact is disputed, and the conflicts grow with the facts: a
            # conflict per pair let two members who each stated hundreds of contradicting
            # values record hundreds of thousands (found by a hostile relative). Each other
            # member's count is their own: one member's many facts hide no one else's.
            continue
        found = contradiction(fact.content, other.content)
        if found is None:
            continue
        a, b = sorted([fact.pk, other.pk])
        conflicts.append(FactConflict(fact_a_id=a, fact_b_id=b, legacy_id=fact.legacy_id,
                                      attribute=found[0].name))
        per_author[other.user_id] += 1
    # One statement however many (a member may hold thousands of facts that one contradicts,
    # each written one by one under the legacy's lock before); a pair recorded already stays.
    FactConflict.objects.bulk_create(conflicts, ignore_conflicts=True)


# --- Erasing the caller's own data (DELETE /api/me/data) --------------------------------------


def _others_holding_rows(*, legacy: Legacy, user: AbstractBaseUser) -> list[object]:
    """The users other than `user` who still have rows in the legacy, oldest account first:
    facts, and the rows of the apps above (conversations, chunks), found through the ORM's
    reverse relations to Legacy, so facts imports none of them. Every model whose rows name a
    legacy and a `user` counts; the family's bookkeeping (memberships, invitations, conflicts
    between facts) does not: it goes with the legacy."""
    holders: set[object] = set()
    for relation in Legacy._meta.related_objects:
        model = relation.related_model
        if not relation.one_to_many or model is LegacyMembership:
            continue
        if not any(field.name == "user" for field in model._meta.concrete_fields):
            continue
        holders.update(
            model._base_manager.filter(**{relation.field.name: legacy})
            .exclude(user=user).values_list("user_id", flat=True).distinct()
        )
    return sorted(holders)


def user_data_erase(
    *, user: AbstractBaseUser, legacies_with_rows: Iterable[object] = ()
) -> dict[str, int]:
    """Erase the facts the user authored and their memberships; hand on, keep or delete their
    legacies.

    A legacy the user belongs to (or created) that has other members stays. If the user was
    an owner and no other owner remains, the longest-standing other member becomes owner;
    `created_by` (a PROTECT key) moves to the longest-standing remaining owner, so that
    support can delete the account afterwards.

    A legacy left with no member, that the user belonged to, created or had rows in (their
    facts, and `legacies_with_rows`: where the apps above erased rows of theirs first), is
    deleted only when nobody else has rows in it (_others_holding_rows). Otherwise it stays,
    with no member, for the rows of the people who are still in it (members removed earlier
    keep their facts and conversations): its `created_by` moves from the user to the oldest
    account among them, and the erase of the last of them deletes it. One user's erase never
    takes another user's rows.

    Erase the user's conversations first (memory_site.privacy.services does): this service
    knows nothing of them. Returns the number of rows erased or changed per kind.
    """
    with transaction.atomic():
        member_of = LegacyMembership.objects.filter(user=user).values_list("legacy_id", flat=True)
        created = Legacy.objects.filter(created_by=user).values_list("pk", flat=True)
        authored = LegacyFact.objects.filter(user=user).values_list("legacy_id", flat=True)
        # Row locks taken in one order: two members erasing at once cannot each hand the
        # legacy to the other and leave it with nobody.
        legacies = list(
            Legacy.objects.select_for_update()
            .filter(pk__in={*member_of, *created, *authored, *legacies_with_rows})
            .order_by("pk")
        )
        own_roles = dict(
            LegacyMembership.objects.filter(user=user).values_list("legacy_id", "role")
        )
        others: dict[object, list[LegacyMembership]] = {}
        for membership in (
            LegacyMembership.objects.filter(legacy__in=legacies)
            .exclude(user=user)
            .order_by("joined_at", "id")
        ):
            others.setdefault(membership.legacy_id, []).append(membership)
        # Counted by model: conflicts recorded against the facts go with them.
        _, deleted_facts = LegacyFact.objects.filter(user=user).delete()
        facts = deleted_facts.get(LegacyFact._meta.label, 0)
        memberships, _ = LegacyMembership.objects.filter(user=user).delete()
        LegacyInvitation.objects.filter(Q(invited_user=user) | Q(invited_by=user)).delete()
        deleted: list[object] = []
        transferred = kept = 0
        for legacy in legacies:
            remaining = others.get(legacy.pk)
            if remaining:
                _, handed_on = _hand_on(legacy=legacy, leaver_id=user.pk,
                                        leaver_role=own_roles.get(legacy.pk), others=remaining)
                transferred += handed_on
                continue
            holders = _others_holding_rows(legacy=legacy, user=user)
            if not holders:
                deleted.append(legacy.pk)
                continue
            kept += 1
            if legacy.created_by_id == user.pk:
                legacy.created_by_id = holders[0]
                legacy.save(update_fields=["created_by"])
        Legacy.objects.filter(pk__in=deleted).delete()
    return {
        "facts": facts,
        "memberships": memberships,
        "legacies_deleted": len(deleted),
        "legacies_transferred": transferred,
        "legacies_kept": kept,
    }
