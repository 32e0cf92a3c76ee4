"""Reads of conversations and messages, always scoped to the conversation's own user."""

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NamedTuple
from uuid import UUID

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.search import SearchVector
from django.db import connection
from django.db.models import (
    BooleanField,
    Count,
    DateTimeField,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    FloatField,
    Func,
    Max,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
)
from django.db.models.functions import Coalesce, Least, Power
from django.utils import timezone

from agent_memory.models import AgentMemory, Place, PlaceMention
from agent_memory.selectors import (
    active_memories_sql,
    memories_from_json,
    places_from_json,
    places_sql,
)
from conversations.models import (
    IDEMPOTENCY_SEPARATOR,
    Conversation,
    ConversationChunk,
    ConversationMemory,
    Message,
)
from conversations.retrieval import SearchHit, search_conversations
from facts.models import Legacy, LegacyFact
from facts.selectors import facts_from_json, facts_visible_sql
from memory_site.core.errors import NotFound
from memory_site.core.sql import (
    PreparedRead,
    json_column,
    prepared_cursor,
    quoted_table,
    user_and_id_samples,
)


def conversations_for_user(user: AbstractBaseUser) -> QuerySet[Conversation]:
    """The user's own conversations, in legacies they still belong to."""
    if not user.is_authenticated:
        return Conversation.objects.none()
    return Conversation.objects.filter(user=user, legacy__memberships__user=user)


# Every agent request reads its conversation: compiled once per process, prepared on the
# server (1.2 ms of compiling a queryset per request otherwise). At most one row (one membership
# per user and legacy): no ORDER BY, which .first() adds.
_CONVERSATION_READ = PreparedRead(
    lambda user, pk: (conversations_for_user(user).select_related("legacy").filter(pk=pk)
                      .order_by()[:1]),
    samples=user_and_id_samples,
)


def conversation_for_user(*, user: AbstractBaseUser, conversation_id: object) -> Conversation:
    """The conversation if it is the user's; otherwise NotFound, as if it did not exist (also
    for an id that is not a UUID)."""
    return _CONVERSATION_READ.one_for(user, conversation_id)


def message_for_user(*, user: AbstractBaseUser, message_id: object) -> Message:
    """A message of one of the user's conversations; NotFound otherwise."""
    message = (
        Message.objects.filter(conversation__in=conversations_for_user(user), pk=message_id)
        .select_related("conversation")
        .first()
    )
    if message is None:
        raise NotFound()
    return message


# A request's Idempotency-Key (printable ASCII, services.validate_idempotency_key) is stored on
# each message the request writes as `<key>␟<part>`: part "" for the message of POST messages
# or a turn's user message, "reply" for the turn's reply, `<i>` for message i of a batch. A key
# a client sends cannot hold the separator, so it never equals a key stored for another request,
# and the messages of one request are exactly those under `<key>␟`. Messages saved before keys
# had a separator hold `<key>`, `<key>:reply` and `<key>:<i>`: they are still read the way they
# were written, so that a request made before still replays.
REPLY_PART = "reply"
_INDEX = re.compile(r"0|[1-9][0-9]*")


def idempotency_stored_key(key: str, part: str | int = "") -> str:
    """What a message that the request with the client's `key` writes as `part` is stored under."""
    return f"{key}{IDEMPOTENCY_SEPARATOR}{part}"


@dataclass(frozen=True)
class KeyedMessages:
    """The messages one client Idempotency-Key names in a conversation."""

    message: Message | None = None  # of POST messages, or a turn's user message
    reply: Message | None = None  # the turn's reply
    batch: dict[int, Message] = field(default_factory=dict)  # by index in the batch

    @property
    def used(self) -> bool:
        return bool(self.message or self.reply or self.batch)


def messages_under_key(
    *, conversation: Conversation, key: str, whole_batch: bool = False
) -> KeyedMessages:
    """What the client's `key` names in the conversation: the messages stored under `<key>␟`,
    and those saved before keys had a separator (`<key>`, and `<key>:<i>` as a batch's). Of a
    batch, only its first message unless `whole_batch`: that says a batch used the key, and
    the exact keys are read from the unique index (a prefix match read every keyed message of
    the conversation)."""
    prefix, old_prefix = idempotency_stored_key(key), f"{key}:"
    message = old_message = reply = None
    batch: dict[int, Message] = {}
    old_batch: dict[int, Message] = {}
    exact = [prefix, idempotency_stored_key(key, REPLY_PART), idempotency_stored_key(key, 0), key,
             f"{old_prefix}0"]
    keyed = Q(idempotency_key__in=exact)
    if whole_batch:
        keyed |= Q(idempotency_key__startswith=prefix) | Q(idempotency_key__startswith=old_prefix)
    for row in Message.objects.filter(keyed, conversation=conversation).order_by():
        stored = row.idempotency_key
        if stored.startswith(prefix):
            part = stored.removeprefix(prefix)
            if part == "":
                message = row
            elif part == REPLY_PART:
                reply = row
            elif _INDEX.fullmatch(part):
                batch[int(part)] = row
        elif stored == key:
            old_message = row
        elif _INDEX.fullmatch(index := stored.removeprefix(old_prefix)):
            old_batch[int(index)] = row
    # An old turn's reply (`<key>:reply`) is found by its metadata (services.turn), not its key.
    return KeyedMessages(message=message or old_message, reply=reply, batch=batch or old_batch)


def idempotency_key_used(*, conversation: Conversation, key: str) -> bool:
    """Whether a request with this Idempotency-Key saved a message in the conversation."""
    return messages_under_key(conversation=conversation, key=key).used


def messages_for_conversation(
    *, conversation: Conversation, after: int | None = None
) -> QuerySet[Message]:
    messages = Message.objects.filter(conversation=conversation)
    if after is not None:
        messages = messages.filter(sequence__gt=after)
    return messages.order_by("sequence")


# --- Memory pipelines (jobs and the sweep) ----------------------------------------------------


def latest_completed_rolling_summary(*, conversation: Conversation) -> ConversationMemory | None:
    """Seed 002's read: the completed summary with the highest end sequence."""
    return (
        ConversationMemory.objects.filter(
            conversation=conversation, status=ConversationMemory.Status.COMPLETED
        )
        .order_by("-end_sequence", "-created_at")
        .first()
    )


# --- The context packet's rows, read in one statement -----------------------------------------


@dataclass(frozen=True)
class ContextRows:
    """What the context packet shows besides its search, as read for it."""

    summary: ConversationMemory | None  # latest_completed_rolling_summary
    messages: list[Message]  # every role, in sequence order, from the first message replayed
    memories: list[AgentMemory]  # agent_memory.selectors.active_memories_for_user
    places: list[Place]  # agent_memory.selectors.places_for_user
    facts: list[LegacyFact]  # facts.selectors.facts_visible_to
    job_refs: list[str]  # checkpoint.active_job_refs
    # What the reader, and the members whose shared facts the reader sees, said last that the
    # family calls the legacy by (Conversation.called_name), the reader's first, at most
    # CALLED_NAMES_MAX: the facts are written with these names.
    called_names: list[str] = field(default_factory=list)


_MESSAGE_FIELDS = ("id", "conversation_id", "sequence", "role", "content", "metadata",
                   "created_at")
_SUMMARY_FIELDS = ("id", "conversation_id", "memory_text", "start_sequence", "end_sequence",
                   "base_memory_id", "status")

# The names the facts block says the person is also called (ContextRows.called_names): each
# member's latest, the reader's first, at most this many (a member's many conversations, each
# with another name, filled the facts block's head: found by a review).
CALLED_NAMES_MAX = 5

_CONTEXT_SQL = """
SELECT
  CASE WHEN s.id IS NOT NULL THEN
    json_build_array(s.id, s.memory_text, s.start_sequence, s.end_sequence, s.base_memory_id)
  END,
  (SELECT coalesce(json_agg(json_build_array(id, sequence, role, content, metadata, created_at)
                            ORDER BY sequence), '[]'::json)
   FROM {messages} WHERE conversation_id = %(conversation_id)s
     AND sequence >= least(coalesce(s.end_sequence + 1, {replay_from}), {raw_from})
     AND sequence <= %(through)s),
  ({memories}),
  ({places}),
  ({facts}),
  (SELECT coalesce(json_agg(id ORDER BY created_at, id), '[]'::json) FROM {summaries}
   WHERE conversation_id = %(conversation_id)s AND status = 'processing'),
  (SELECT coalesce(json_agg(n.called_name ORDER BY n.mine DESC, n.created_at DESC), '[]'::json)
   FROM (SELECT * FROM (
           SELECT DISTINCT ON (c.user_id) c.called_name, c.created_at,
                  c.user_id = %(user_id)s AS mine
           FROM {conversations} c
           WHERE c.legacy_id = %(legacy_id)s AND c.called_name <> ''
             AND (c.user_id = %(user_id)s
                  OR EXISTS (SELECT 1 FROM {facts_table} f
                             WHERE f.user_id = c.user_id AND f.legacy_id = %(legacy_id)s
                               AND f.visibility = 'shared' AND f.superseded_by_id IS NULL))
           ORDER BY c.user_id, c.created_at DESC) AS latest
         ORDER BY mine DESC, created_at DESC LIMIT {called_names_max}) AS n)
FROM (VALUES (1)) AS one
LEFT JOIN LATERAL (
  SELECT id, memory_text, start_sequence, end_sequence, base_memory_id FROM {summaries}
  WHERE conversation_id = %(conversation_id)s AND status = 'completed'
    AND end_sequence <= %(through)s
  ORDER BY end_sequence DESC, created_at DESC LIMIT 1
) s ON true
"""


def _first_of_last(roles_param: str, count: int) -> str:
    """SQL of the sequence of the first of the last `count` messages up to `through` whose role
    is in the parameter `roles_param` (the count-th latest, or the first when there are fewer;
    NULL without any, or for count < 1)."""
    if count < 1:
        return "NULL"
    table = quoted_table(Message)
    where = (f"conversation_id = %(conversation_id)s AND role = ANY(%({roles_param})s::text[]) "
             "AND sequence <= %(through)s")
    return (f"coalesce((SELECT sequence FROM {table} WHERE {where} ORDER BY sequence DESC "
            f"OFFSET {count - 1} LIMIT 1), "
            f"(SELECT sequence FROM {table} WHERE {where} ORDER BY sequence LIMIT 1))")


# No message has a later sequence (an integer column): the conversation as it stands.
_LATEST_SEQUENCE = 2**31 - 1


def context_rows(
    *, conversation: Conversation, recent: int, turns: int, through: int | None = None
) -> ContextRows:
    """Everything the context packet shows besides its search, in one statement scoped by the
    conversation, its user and its legacy in SQL: the latest completed rolling summary; the
    messages from the first of (after the summary or, without one, the first of the last
    `recent` user and assistant messages) and the first of the last `turns` user messages,
    every role, without the columns only retrieval reads; the user's active memories and
    places; the facts the user sees about the legacy; the rolling summaries being written.
    Rows carry the columns the packet reads (the others load on access).

    `through`: the conversation as it was at that message (a turn's own user message): no
    later message, and no summary that ends after it; None: as it stands."""
    sql = _CONTEXT_SQL.format(
        summaries=quoted_table(ConversationMemory),
        messages=quoted_table(Message),
        replay_from=_first_of_last("replayed_roles", recent),
        raw_from=_first_of_last("user_roles", turns),
        memories=active_memories_sql(), places=places_sql(), facts=facts_visible_sql(),
        conversations=quoted_table(Conversation), facts_table=quoted_table(LegacyFact),
        called_names_max=CALLED_NAMES_MAX,
    )
    with prepared_cursor() as cursor:
        cursor.execute(sql, {"conversation_id": conversation.pk,
                             "user_id": conversation.user_id,
                             "legacy_id": conversation.legacy_id,
                             "replayed_roles": [Message.Role.USER, Message.Role.ASSISTANT],
                             "user_roles": [Message.Role.USER],
                             "through": _LATEST_SEQUENCE if through is None else through})
        summary, messages, memories, places, facts, jobs, called = map(json_column,
                                                                       cursor.fetchone())
    alias = connection.alias
    if summary is not None:
        summary = ConversationMemory.from_db(alias, _SUMMARY_FIELDS, (
            UUID(summary[0]), conversation.pk, *summary[1:4],
            summary[4] and UUID(summary[4]), ConversationMemory.Status.COMPLETED,
        ))
    return ContextRows(
        summary=summary,
        messages=[
            Message.from_db(alias, _MESSAGE_FIELDS, (
                UUID(pk), conversation.pk, sequence, role, content, metadata,
                datetime.fromisoformat(created_at),
            ))
            for pk, sequence, role, content, metadata, created_at in messages
        ],
        memories=memories_from_json(memories, user_id=conversation.user_id),
        places=places_from_json(places, user_id=conversation.user_id),
        facts=facts_from_json(facts),
        job_refs=[f"memory:{pk}" for pk in jobs],
        called_names=list(dict.fromkeys(called)),
    )


def last_summarized_end(*, conversation: Conversation) -> int:
    """Seed 000's `last_summarized_end`: the end (exclusive) of the archived prefix, 0 if none."""
    end = ConversationChunk.objects.filter(conversation=conversation).aggregate(
        end=Max("message_range_end")
    )["end"]
    return end or 0


_NEVER = datetime(1970, 1, 1, tzinfo=UTC)


def _retry_at(failed_at: str, failures: str) -> ExpressionWrapper:
    """When work that failed `failures` times in a row, last at `failed_at`, may be tried
    again: MEMORY_RETRY_BACKOFF_SECONDS doubled for each failure after the first, at most
    MEMORY_RETRY_BACKOFF_MAX_SECONDS. NULL when it has not failed."""
    # 2**30 times any base exceeds any cap; the bound keeps power() finite after years of failing.
    doublings = Least(F(failures) - 1, Value(30))
    seconds = Least(
        Value(float(settings.MEMORY_RETRY_BACKOFF_SECONDS))
        * Power(Value(2.0), doublings, output_field=FloatField()),
        Value(float(settings.MEMORY_RETRY_BACKOFF_MAX_SECONDS)),
        output_field=FloatField(),
    )
    interval = Func(seconds, template="make_interval(secs => %(expressions)s)",
                    output_field=DurationField())
    return ExpressionWrapper(F(failed_at) + interval, output_field=DateTimeField())


def _with_retry_times(conversations: QuerySet[Conversation]) -> QuerySet[Conversation]:
    """Annotate `summary_retry_at` (from the rolling summaries that failed since the latest
    completed one) and `archive_retry_at` (from the archive failures in a row); NULL for no
    failure."""
    memories = ConversationMemory.objects.filter(conversation=OuterRef("pk"))
    failed = memories.filter(
        status=ConversationMemory.Status.FAILED, created_at__gt=OuterRef("summary_since")
    )
    return conversations.annotate(
        summary_since=Coalesce(
            Subquery(
                memories.filter(status=ConversationMemory.Status.COMPLETED)
                .order_by("-created_at").values("created_at")[:1]
            ),
            Value(_NEVER),
        ),
    ).annotate(
        summary_failures=Coalesce(
            Subquery(failed.order_by().values("conversation").annotate(n=Count("pk")).values("n")),
            Value(0),
        ),
        # When the last failed attempt started: a row the sweep recovered from a dead worker
        # failed long before it was marked, and waits no longer for that.
        summary_failed_at=Subquery(failed.order_by("-created_at").values("created_at")[:1]),
    ).annotate(
        summary_retry_at=_retry_at("summary_failed_at", "summary_failures"),
        archive_retry_at=_retry_at("archive_failed_at", "archive_failures"),
    )


class RetryTimes(NamedTuple):
    """When the conversation's rolling summary and archive may be tried again (None: now)."""

    summary: datetime | None
    archive: datetime | None


def rolling_summary_retry_times(*, conversation: Conversation) -> RetryTimes:
    """Both None for a conversation deleted meanwhile: the job's next write finds it gone."""
    row = _with_retry_times(Conversation.objects.filter(pk=conversation.pk)).values_list(
        "summary_retry_at", "archive_retry_at"
    ).first()
    summary, archive = row if row is not None else (None, None)
    return RetryTimes(summary=summary, archive=archive)


def conversations_due_for_summarization() -> QuerySet[Conversation]:
    """Every conversation a summarisation job has work for, now: a rolling summary behind its
    last message (and none processing), more than SUMMARIZATION_THRESHOLD unarchived
    messages, or a closed conversation with an unarchived tail — each only once the backoff
    after its failures in a row has passed (`_retry_at`)."""
    now = timezone.now()
    completed = ConversationMemory.objects.filter(
        conversation=OuterRef("pk"), status=ConversationMemory.Status.COMPLETED
    ).order_by("-end_sequence").values("end_sequence")[:1]
    processing = ConversationMemory.objects.filter(
        conversation=OuterRef("pk"), status=ConversationMemory.Status.PROCESSING
    )
    last = F("message_count") - 1
    summary_due = (
        Q(message_count__gt=settings.MEMORY_SUMMARIZE_AFTER_SEQ, is_processing=False)
        & (Q(completed_end__isnull=True) | Q(completed_end__lt=last))
        & (Q(summary_retry_at__isnull=True) | Q(summary_retry_at__lte=now))
    )
    return (
        _with_retry_times(Conversation.objects.all())
        .annotate(
            completed_end=Subquery(completed),
            archived_end=_archived_end(),
            is_processing=Exists(processing),
        )
        .filter(summary_due | _archive_due(now))
        .order_by("last_message_at")
    )


def _archive_due(now: datetime) -> Q:
    """The archive part of conversations_due_for_summarization, on its annotations."""
    return (
        Q(message_count__gt=F("archived_end") + settings.SUMMARIZATION_THRESHOLD)
        | Q(status=Conversation.Status.SHUTDOWN_CLEAN, message_count__gt=F("archived_end"))
    ) & _archive_not_backing_off(now)


def _archive_not_backing_off(now: datetime) -> Q:
    """No archive failure in a row, or its backoff over (_with_retry_times' annotation)."""
    return Q(archive_retry_at__isnull=True) | Q(archive_retry_at__lte=now)


def _archived_end() -> Coalesce:
    return Coalesce(
        Subquery(ConversationChunk.objects.filter(conversation=OuterRef("pk"))
                 .order_by("-message_range_end").values("message_range_end")[:1]),
        Value(0),
    )


def message_said_at(*, conversation: Conversation, sequence: int) -> datetime | None:
    """When the conversation's message of this sequence was said; None without one."""
    return (Message.objects.filter(conversation=conversation, sequence=sequence)
            .values_list("created_at", flat=True).first())


def unarchived_said_before(*, conversation: Conversation, before: datetime) -> list[Conversation]:
    """The same user's other conversations about the same legacy with messages not archived
    yet, the first of them said before `before`, earliest first — due or not (an open
    conversation below the threshold too), and not backing off after failures: what an archive
    batch of `conversation` said at `before` should find filed first."""
    said = Message.objects.filter(conversation=OuterRef("pk"), sequence=OuterRef("archived_end"))
    return list(
        _with_retry_times(Conversation.objects.filter(
            user_id=conversation.user_id, legacy_id=conversation.legacy_id,
        ).exclude(pk=conversation.pk))
        .annotate(archived_end=_archived_end())
        .filter(_archive_not_backing_off(timezone.now()), message_count__gt=F("archived_end"))
        .annotate(first_said=Subquery(said.values("created_at")[:1]))
        .filter(first_said__lt=before)
        .select_related("legacy", "user")
        .order_by("first_said", "pk")
    )


def conversations_idle_since(*, cutoff: datetime) -> QuerySet[Conversation]:
    """Open conversations whose last message is older than `cutoff`."""
    return Conversation.objects.filter(last_message_at__lt=cutoff).exclude(
        status=Conversation.Status.SHUTDOWN_CLEAN
    )


# --- Transcript page (dashboard): a conversation's summaries ---------------------------------


def rolling_summaries_for_conversation(*, conversation: Conversation) -> QuerySet[ConversationMemory]:
    """Seed 002's rolling-summary versions of the conversation, oldest first."""
    return ConversationMemory.objects.filter(conversation=conversation).order_by(
        "created_at", "end_sequence"
    )


def archived_chunks_for_conversation(*, conversation: Conversation) -> QuerySet[ConversationChunk]:
    """Seed 000's archived summary chunks of the conversation, in message order."""
    return (
        ConversationChunk.objects.filter(conversation=conversation)
        .defer("embedding")
        .order_by("message_range_start")
    )


# --- Conversations page (dashboard): my conversations about a legacy, search, deletion -------


def conversations_for_legacy(*, user: AbstractBaseUser, legacy: Legacy) -> QuerySet[Conversation]:
    """The user's own conversations about the legacy, newest first."""
    return conversations_for_user(user).filter(legacy=legacy).order_by("-created_at", "-pk")


@dataclass(frozen=True)
class ConversationMatch:
    """A conversation found by the conversations page's search: by its title, by what was said
    in it (`hits`, the agent's search units that matched the words, best first), or both."""

    conversation: Conversation
    title_match: bool
    hits: list[SearchHit]


def conversations_matching(
    *, user: AbstractBaseUser, legacy: Legacy, query: str
) -> list[ConversationMatch]:
    """The user's conversations about the legacy whose title contains `query` or whose text
    the agent's search finds (retrieval.search_conversations, SEARCH_MAX_K units), newest
    first. Of the search's units only those that share a word with the query are kept: its
    vector part ranks every unit, so without that a search would never come back empty."""
    result = search_conversations(user=user, legacy=legacy, query=query, k=settings.SEARCH_MAX_K)
    hits: dict[object, list[SearchHit]] = {}
    for hit in result.hits:
        if hit.text_rank is not None:
            hits.setdefault(hit.conversation_id, []).append(hit)
    found = conversations_for_legacy(user=user, legacy=legacy).annotate(
        title_match=ExpressionWrapper(Q(title__icontains=query), output_field=BooleanField())
    ).filter(Q(title_match=True) | Q(pk__in=list(hits)))
    return [
        ConversationMatch(conversation=c, title_match=c.title_match, hits=hits.get(c.pk, []))
        for c in found
    ]


def conversation_deletion_preview(*, conversation: Conversation) -> dict[str, int]:
    """What services.conversation_delete would delete, per kind, for its confirmation page:
    messages, summaries, chunks, place mentions and the facts its user took from it."""
    return {
        "messages": Message.objects.filter(conversation=conversation).count(),
        "summaries": ConversationMemory.objects.filter(conversation=conversation).count(),
        "chunks": ConversationChunk.objects.filter(conversation=conversation).count(),
        "place_mentions": PlaceMention.objects.filter(conversation=conversation).count(),
        "facts": LegacyFact.objects.filter(
            source_conversation=conversation, user_id=conversation.user_id
        ).count(),
    }


# --- The caller's own data (GET /api/me/data) ------------------------------------------------


# What a unit's text derives: read by the search only.
_DERIVED = ("embedding", "embedding_bits", "search_vector")


def user_data_export(user: AbstractBaseUser) -> dict[str, QuerySet]:
    """Every conversation of the user (also in legacies they have left) with its messages,
    rolling summaries and archived chunks, for the export's ExportConversationSerializer.
    Messages and chunks come without their vectors and search vectors (derived from the
    content, not readable, and not exported): read, a long history's vectors took 2 GB of a
    web worker for a 25 MB export. Four queries, whatever the number of rows."""
    return {
        "conversations": Conversation.objects.filter(user=user)
        .prefetch_related(
            Prefetch("messages", queryset=Message.objects.defer(*_DERIVED).order_by("sequence")),
            Prefetch(
                "memories",
                queryset=ConversationMemory.objects.order_by("created_at", "end_sequence", "id"),
            ),
            Prefetch(
                "chunks",
                queryset=ConversationChunk.objects.defer(*_DERIVED).order_by(
                    "message_range_start"
                ),
            ),
        )
        .order_by("created_at", "id"),
    }


# --- where a fact came from: its source range in its author's conversation -----------------


def fact_source_messages(*, fact: LegacyFact) -> QuerySet[Message]:
    """What the user and the agent said in the fact's source range (end exclusive) of its source
    conversation, and nothing else of that conversation; nothing without a recorded range.

    The fact must come from a selector that checked the caller may see it (fact_for_user):
    its source is then shown to whoever may see the fact, though the conversation is its
    author's alone. Tool and system messages (memory reads, say) are left out."""
    if None in (fact.source_conversation_id, fact.source_range_start, fact.source_range_end):
        return Message.objects.none()
    return Message.objects.filter(
        conversation_id=fact.source_conversation_id,
        # Facts come from their author's own conversations about the legacy: a source that is
        # anyone else's shows nothing, whatever the row says.
        conversation__user_id=fact.user_id,
        conversation__legacy_id=fact.legacy_id,
        sequence__gte=fact.source_range_start,
        sequence__lt=fact.source_range_end,
        role__in=[Message.Role.USER, Message.Role.ASSISTANT],
    ).order_by("sequence")


def _lexemes(expression: str) -> Func:
    """The text's stemmed words, stopwords left out: PostgreSQL's text search with
    SEARCH_TEXT_CONFIG, as the conversation search uses it."""
    return Func(
        SearchVector(expression, config=settings.SEARCH_TEXT_CONFIG),
        function="tsvector_to_array",
        output_field=ArrayField(TextField()),
    )


_VALUE_WORD = re.compile(r"\b(?:[A-Z][a-z]+|\d+)\b")
# A message that corrects: "Actually it was Tuesdays, not Sundays", "sorry, I mean 1962".
_CORRECTION_MARK = re.compile(
    r"\b(?:not|actually|instead|sorry|wait|i mean|i meant|correction|wrong|mistake|rather)\b",
    re.IGNORECASE,
)


def _values(text: str) -> set[str]:
    """The values `text` states, lower-cased: capitalised words after its first, and numbers."""
    return {word.lower() for word in _VALUE_WORD.findall(text.split(" ", 1)[-1])}


def _lexemes_of(lexemes: set[str], values: set[str]) -> set[str]:
    """Those of `lexemes` that stand for one of `values` (a lexeme is its word's stem, so it
    starts the word)."""
    return {lexeme for lexeme in lexemes if any(value.startswith(lexeme) for value in values)}


def fact_source_matching_messages(*, fact: LegacyFact) -> list[Message]:
    """The message(s) of the author's in the source range that the fact was taken from: the
    user message sharing the most words with the fact (stemmed, stopwords and the words of the
    legacy's name left out, since every message about the person shares those), the earliest
    on a tie, and only if it shares at least half of the fact's words. None otherwise: the
    fact was reworded or edited since, or its words are too common to point at one message.
    When the fact states a value that message does not (a name, a day, a number: a
    correction, "every Sunday" and then "Actually it was Tuesdays, not Sundays"), the user
    message of the range that says most of those values (the latest on a tie), names a value
    of the first that the fact does not (the replaced one: "Sundays") and reads as a
    correction ("not", "actually", "sorry", "I mean" …) is shown with it, so that the page
    does not show only the value the fact replaced.

    What a fellow member sees of the source: at most those two messages of a conversation that
    stays its author's, and never the agent's replies."""
    words, names = (
        LegacyFact.objects.filter(pk=fact.pk)
        .annotate(words=_lexemes("content"), names=_lexemes("legacy__name"))
        .values_list("words", "names")
        .get()
    )
    wanted = set(words) - set(names)
    scored = [
        (len(wanted & set(message.words)), message)
        for message in fact_source_messages(fact=fact)
        .filter(role=Message.Role.USER)
        .annotate(words=_lexemes("content"))
    ]
    needed = max(1, math.ceil(len(wanted) / 2))
    best = max(scored, key=lambda pair: (pair[0], -pair[1].sequence), default=None)
    if best is None or best[0] < needed:
        return []
    # The values of the fact that the best message lacks.
    values = _values(fact.content)
    missing = _lexemes_of(wanted - set(best[1].words), values)
    # What the correction replaced: the best message's values that the fact does not say. A
    # message that brings the fact's value names it too ("Tuesdays, not Sundays"); one that
    # only happens to say the value (another private matter "on Tuesday") is not shown.
    replaced = _lexemes_of(set(best[1].words) - wanted, _values(best[1].content) - values)
    rest = [(len(missing & set(message.words)), message) for _, message in scored
            if message.pk != best[1].pk and replaced & set(message.words)
            and _CORRECTION_MARK.search(message.content)]
    completing = max(rest, key=lambda pair: (pair[0], pair[1].sequence), default=None)
    if not missing or completing is None or completing[0] == 0:
        return [best[1]]
    return sorted([best[1], completing[1]], key=lambda message: message.sequence)


def fact_source_for_viewer(*, fact: LegacyFact, user: AbstractBaseUser) -> list[Message]:
    """What the source page shows `user` of the fact's source: its author, the whole range
    (fact_source_messages); anyone else who may see the fact, only the author's message(s)
    it was taken from (fact_source_matching_messages)."""
    if fact.user_id == user.pk:
        return list(fact_source_messages(fact=fact))
    return fact_source_matching_messages(fact=fact)
