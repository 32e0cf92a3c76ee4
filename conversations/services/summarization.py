"""Writes of the memory pipelines: the rolling summary (seed 002) and archived chunks with facts (seed 000)."""

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from conversations import queue, selectors
from conversations.embedding import embed_texts, model_key
from conversations.models import Conversation, ConversationChunk, ConversationMemory, Message
from conversations.services import messages as message_services
from facts.models import LegacyFact
from facts.selectors import facts_for_correction
from facts.services import fact_create, fact_supersede
from memory_site.core import events
from memory_site.core.ai import (
    EmbeddingError,
    KnownFact,
    LLMError,
    LLMOutputError,
    TranscriptLine,
    get_llm,
)
from memory_site.core.errors import NotFound
from memory_site.core.language.kinship import KinshipReader
from memory_site.core.language.names import read_legacy_name, short_forms
from memory_site.core.language.sentences import display_name
from memory_site.core.locks import LockNamespace, hold_user

logger = logging.getLogger(__name__)

STUCK_ERROR = "stuck in processing; recovered by the sweep"


def summary_window(last_sequence: int) -> tuple[int, int]:
    """Seed 002's sliding window ending at `last_sequence`, starting on an even sequence."""
    start = max(0, last_sequence - settings.MEMORY_ROLLING_WINDOW_SIZE + 1)
    if start % 2:
        start += 1
    return start, last_sequence


def legacy_aliases(legacy_name: str) -> list[str]:
    """Other names the family uses: any nickname written in quotes or parentheses, as in
    `Margaret "Peggy" Whitfield` or `Robert (Bob) Lee`, the first name, the kinship word the
    name opens with ("Grandpa Joe": "Joe", "Grandpa"; a kinship alias, see
    memory_site.core.language.names.read_legacy_name), then the common short forms of those
    first names from the nickname table ("Gene" for Eugene, "Maggie" for Margaret). Only the
    legacy's own names expand."""
    aliases = read_legacy_name(legacy_name).aliases
    return [*aliases, *short_forms([display_name(legacy_name), *aliases])]


# The kinship readings of the conversations archived lately in this process, by conversation
# id: (reader, sequence read up to). A reading is taken out while it reads on (two threads
# never share one) and put back, most recent last; the oldest go beyond KINSHIP_READINGS_KEPT.
_KINSHIP_READINGS: "OrderedDict[object, tuple[KinshipReader, int]]" = OrderedDict()
_KINSHIP_READINGS_LOCK = threading.Lock()
KINSHIP_READINGS_KEPT = 64


@dataclass(frozen=True)
class ConversationNames:
    """What the legacy is called in a conversation so far (conversation_names)."""

    aliases: list[str]
    # The name the family calls them by, once a message said it ("everyone called her
    # freda": Freda); facts are written with it.
    called: str | None


def conversation_names(*, conversation: Conversation, end: int) -> ConversationNames:
    """What the legacy is called in messages before `end`: their first name and nickname,
    the kinship words the user tied to them in ALL their messages so far (rules in
    docs/quality.md), so a batch that only says "Mom" knows Mom is Rose when an earlier
    batch said "my mom, Rose", and "Dad" in a conversation about Rose stays Dad; and the name
    the family said they call them by ("everyone called her freda"), an alias too.

    A catch-up asks once per batch with a growing `end`, and a long import is archived by
    one job after another, so the reading so far is kept in this process by conversation
    and each call reads only the user's messages since the previous one (rereading all of
    them for every batch took time quadratic in the conversation's length). Messages are
    only ever appended, so what was read stays true; an `end` before the last one, or a
    renamed legacy, starts a new reading."""
    name = conversation.legacy.name
    names = legacy_aliases(name)
    with _KINSHIP_READINGS_LOCK:
        reading = _KINSHIP_READINGS.pop(conversation.pk, None)
    if reading is not None and reading[0].legacy_name == name and reading[1] <= end:
        reader, read_to = reading
    else:
        reader, read_to = KinshipReader(name, names), 0
    reader.read(Message.objects.filter(
        conversation=conversation, role=Message.Role.USER, sequence__gte=read_to, sequence__lt=end
    ).order_by("sequence").values_list("content", flat=True))
    called = reader.called or _called_before(conversation)
    aliases = reader.batch_aliases(names, called)
    with _KINSHIP_READINGS_LOCK:
        _KINSHIP_READINGS[conversation.pk] = (reader, end)
        while len(_KINSHIP_READINGS) > KINSHIP_READINGS_KEPT:
            _KINSHIP_READINGS.popitem(last=False)
    if reader.called and reader.called != conversation.called_name:
        Conversation.objects.filter(pk=conversation.pk).update(called_name=reader.called)
        conversation.called_name = reader.called
    return ConversationNames(aliases=aliases, called=called)


def _called_before(conversation: Conversation) -> str | None:
    """The name the user said in their latest earlier conversation about the legacy that the
    family calls them by (Conversation.called_name), if any said one."""
    return Conversation.objects.filter(
        user_id=conversation.user_id, legacy_id=conversation.legacy_id,
        created_at__lt=conversation.created_at,
    ).exclude(called_name="").order_by("-created_at").values_list(
        "called_name", flat=True).first()


def transcript_lines(*, conversation: Conversation, start: int, end: int) -> list[TranscriptLine]:
    """Messages with start <= sequence < end, as the providers see them."""
    messages = Message.objects.filter(
        conversation=conversation, sequence__gte=start, sequence__lt=end
    ).order_by("sequence").values_list("sequence", "role", "content")
    return [TranscriptLine(sequence=s, role=r, content=c) for s, r, c in messages]


def _set_rolling_summary_status(memory: ConversationMemory, **fields: object) -> bool:
    """Finish a `processing` row: compare-and-set (`… WHERE status = 'processing'`), so that a
    job finishing after the sweep marked its row failed (its worker was presumed dead) does not
    overwrite that row; the instance then takes the row's current status and error. Updates
    the instance; False when the row is gone (its conversation was deleted while the summary
    was being written)."""
    updated = ConversationMemory.objects.filter(
        pk=memory.pk, status=ConversationMemory.Status.PROCESSING
    ).update(updated_at=timezone.now(), **fields)
    if not updated:
        current = ConversationMemory.objects.filter(pk=memory.pk).values("status", "error").first()
        if current is None:
            return False
        logger.warning("Memory %s was already %s; the late result is dropped", memory.pk,
                       current["status"])
        memory.status, memory.error = current["status"], current["error"]
        return True
    for name, value in fields.items():
        setattr(memory, name, value)
    logger.debug("Memory %s status updated to %s", memory.pk, memory.status)
    return True


class ConversationGone(Exception):
    """The conversation was deleted while a job was working on it: the job stops, and what it
    was writing is not stored (conversation_catch_up catches it)."""

    def __init__(self, conversation_id: object):
        super().__init__(f"conversation {conversation_id} was deleted")
        self.conversation_id = conversation_id


def _lock_conversation(conversation: Conversation) -> None:
    """Inside a transaction, before a pipeline write: lock the conversation's row, so that
    deleting it (services.deletion.conversation_delete locks it too) waits for the write and
    then takes what it wrote along; ConversationGone when it is deleted already. The user's
    row is held first (memory_site.core.locks.hold_user), in the order of an erase of their
    data, which locks that row and then deletes the conversations."""
    hold_user(conversation.user_id)
    if not Conversation.objects.select_for_update().filter(pk=conversation.pk).exists():
        raise ConversationGone(conversation.pk)


class _NothingNew(Exception):
    """Rolls back the claimed row when the latest completed summary already covers the window."""


def rolling_summary_begin(*, conversation: Conversation, final: bool = False) -> ConversationMemory | None:
    """Claim the conversation's next rolling summary by inserting its `processing` row.

    The partial unique index allows one `processing` row per conversation, so of any
    number of concurrent callers exactly one gets a row; the others get None. Returns None
    too when there is nothing new to summarise. With `final` (closing), a conversation
    shorter than MEMORY_SUMMARIZE_AFTER_SEQ is summarised as well. ConversationGone when the
    conversation has been deleted.
    """
    last_sequence = conversation.message_count - 1
    threshold = 0 if final else settings.MEMORY_SUMMARIZE_AFTER_SEQ
    if last_sequence < 0 or last_sequence < threshold:
        return None
    start, end = summary_window(last_sequence)
    try:
        with transaction.atomic():
            _lock_conversation(conversation)
            memory = ConversationMemory.objects.create(
                conversation=conversation, start_sequence=start, end_sequence=end,
                status=ConversationMemory.Status.PROCESSING,
            )
            # Read after the insert: a summary that completed while we were inserting is seen
            # here, so it is never redone.
            base = selectors.latest_completed_rolling_summary(conversation=conversation)
            if base is not None and base.end_sequence >= end:
                raise _NothingNew
            memory.base_memory = base
            memory.save(update_fields=["base_memory"])
    except IntegrityError:
        logger.debug("Summarization already in progress for %s", conversation.pk)
        return None
    except _NothingNew:
        logger.debug("No new messages to summarize for %s", conversation.pk)
        return None
    return memory


def rolling_summary_generate(*, memory: ConversationMemory) -> ConversationMemory:
    """Fill a `processing` row from its base memory and the messages after it; `completed`
    with the text and timing, or `failed` with the error. Never raises for a provider error;
    ConversationGone when the row went with its conversation meanwhile (nothing is stored)."""
    conversation = memory.conversation
    start, end = memory.start_sequence, memory.end_sequence
    base = memory.base_memory
    first_new = max(start, base.end_sequence + 1) if base else start
    began = time.monotonic()
    try:
        lines = transcript_lines(conversation=conversation, start=first_new, end=end + 1)
        text = get_llm().summarize_window(
            previous_summary=base.memory_text if base else None,
            messages=lines,
            window_start=start,
            legacy_name=conversation.legacy.name,
        )
        if not text.strip():
            raise LLMError("the provider returned an empty summary")
        elapsed = int((time.monotonic() - began) * 1000)
        stored = _set_rolling_summary_status(
            memory, status=ConversationMemory.Status.COMPLETED, memory_text=text,
            generation_time_ms=elapsed, error="",
        )
    except Exception as exc:
        # Seed 002: any failure marks the row failed, so the next trigger redoes the window.
        elapsed = int((time.monotonic() - began) * 1000)
        logger.warning("Summarizing messages %s-%s for %s failed: %s", start, end,
                       conversation.pk, exc)
        if not _set_rolling_summary_status(
            memory, status=ConversationMemory.Status.FAILED, generation_time_ms=elapsed,
            error=f"{type(exc).__name__}: {exc}"[:2000],
        ):
            raise ConversationGone(memory.conversation_id) from None
        return memory
    if not stored:
        raise ConversationGone(memory.conversation_id)
    if memory.status != ConversationMemory.Status.COMPLETED:
        return memory  # too late: the sweep had failed the row, and it stays failed
    events.publish(events.SUMMARY_COMPLETED, user_id=conversation.user_id, data={
        "conversation_id": str(conversation.pk), "legacy_id": str(conversation.legacy_id),
        "summary_id": str(memory.pk), "start_sequence": start, "end_sequence": end,
    })
    if start > 0:
        logger.info("Sliding window: dropping seq 0-%s for %s", start - 1, conversation.pk)
    logger.info("Summarized messages %s-%s for %s in %sms", start, end, conversation.pk, elapsed)
    return memory


def rolling_summary_update(*, conversation: Conversation, final: bool = False) -> ConversationMemory | None:
    """Seed 002's trigger and background summarisation in one: claim, then generate."""
    memory = rolling_summary_begin(conversation=conversation, final=final)
    if memory is None:
        return None
    return rolling_summary_generate(memory=memory)


def rolling_summaries_recover_stuck() -> int:
    """Mark `processing` rows older than MEMORY_PROCESSING_TIMEOUT_SECONDS failed (their worker
    died), so that the next trigger redoes their window. Returns how many."""
    cutoff = timezone.now() - timedelta(seconds=settings.MEMORY_PROCESSING_TIMEOUT_SECONDS)
    stuck = ConversationMemory.objects.filter(
        status=ConversationMemory.Status.PROCESSING, created_at__lt=cutoff
    )
    count = stuck.update(
        status=ConversationMemory.Status.FAILED, error=STUCK_ERROR, updated_at=timezone.now()
    )
    if count:
        logger.warning("Recovered %d stuck summaries", count)
    return count


def rolling_summary_retry(*, memory: ConversationMemory) -> bool:
    """Support staff's retry of a failed or stuck summary: a stuck row is marked failed, and
    its conversation's summarisation runs again (from the latest completed summary).

    Returns False, changing nothing, for a completed row or one still legitimately running.
    """
    cutoff = timezone.now() - timedelta(seconds=settings.MEMORY_PROCESSING_TIMEOUT_SECONDS)
    if memory.status == ConversationMemory.Status.PROCESSING:
        if memory.created_at >= cutoff:
            return False
        _set_rolling_summary_status(memory, status=ConversationMemory.Status.FAILED, error=STUCK_ERROR)
    elif memory.status != ConversationMemory.Status.FAILED:
        return False
    conversation_id = memory.conversation_id
    transaction.on_commit(lambda: queue.enqueue_summarization(conversation_id=conversation_id))
    return True


def archive_range_due(*, conversation: Conversation, final: bool = False) -> tuple[int, int] | None:
    """Seed 000's next batch: when more than SUMMARIZATION_THRESHOLD messages are unsummarised,
    the oldest SUMMARIZATION_BATCH_SIZE of them (end exclusive). With `final` (closing), any
    unsummarised tail, even shorter than a batch."""
    total = Message.objects.filter(conversation=conversation).count()
    archived_end = selectors.last_summarized_end(conversation=conversation)
    unsummarized = total - archived_end
    if unsummarized <= 0 or (not final and unsummarized <= settings.SUMMARIZATION_THRESHOLD):
        return None
    return archived_end, min(archived_end + settings.SUMMARIZATION_BATCH_SIZE, total)


def chunk_archive_range(*, conversation: Conversation, start: int, end: int,
                        lines: list[TranscriptLine] | None = None) -> ConversationChunk | None:
    """Summarise messages [start, end) with ONE provider call, embed the summary, and save the
    chunk and the extracted facts in one transaction. `lines`: the range's messages when the
    caller has read them already (the catch-up reads several ranges in one query).

    Provider, embedding and database errors propagate and leave nothing stored. A range that
    is already archived (another worker won the race) returns None: the unique range index
    decides, and nothing is duplicated. ConversationGone, storing nothing, when the
    conversation was deleted during the provider calls.
    """
    if lines is None:
        lines = transcript_lines(conversation=conversation, start=start, end=end)
    if not lines:
        return None
    legacy = conversation.legacy
    # The user's current facts the batch may correct, by short refs that mean nothing outside
    # this call (the provider never sees a database id).
    known = facts_for_correction(
        user=conversation.user, legacy=legacy,
        text=" ".join(line.content for line in lines if line.role == "user"),
        limit=settings.FACT_CORRECTION_KNOWN_FACTS,
    )
    known_by_ref = {f"f{i}": fact for i, fact in enumerate(known, 1)}
    names = conversation_names(conversation=conversation, end=end)
    extraction = get_llm().summarize_and_extract(
        messages=lines, legacy_name=legacy.name, aliases=names.aliases, called=names.called,
        known_facts=[KnownFact(ref=ref, content=fact.content) for ref, fact in known_by_ref.items()],
    )
    # The chunk's vector as every stored vector is made (long texts in parts; EmbeddingError
    # on a vector of another size), so it is one of model_key()'s.
    vectors = embed_texts([extraction.summary])
    try:
        with transaction.atomic():
            _lock_conversation(conversation)
            chunk = ConversationChunk.objects.create(
                conversation=conversation, user=conversation.user, legacy=legacy,
                content=extraction.summary, embedding=vectors[0], embedding_model=model_key(),
                message_range_start=start, message_range_end=end,
            )
            fact_ids = []
            for fact in extraction.facts:
                try:
                    stored, created = fact_create(
                        legacy=legacy, user=conversation.user, category=fact.category,
                        content=fact.content, source_conversation=conversation,
                        source_range=(start, end), person_names=names.aliases,
                    )
                except ValidationError as exc:
                    # One unusable fact (too long, say) must not block the range forever.
                    logger.warning("Skipped an extracted fact for %s: %s", conversation.pk, exc)
                    continue
                if created:
                    fact_ids.append(stored.pk)
                if fact.supersedes is not None:
                    if fact.supersedes not in known_by_ref:
                        # parse_summary_extraction refuses this; a provider that skipped it
                        # stores nothing of the batch either.
                        raise LLMOutputError(f"unknown fact reference {fact.supersedes!r}")
                    _apply_correction(stored, known_by_ref[fact.supersedes], created=created)
            _publish_archived(conversation=conversation, chunk=chunk, fact_ids=fact_ids)
    except IntegrityError:
        if ConversationChunk.objects.filter(
            conversation=conversation, message_range_start=start, message_range_end=end
        ).exists():
            logger.info("Messages %s-%s of %s are already archived", start, end, conversation.pk)
            return None
        raise
    logger.info("Archived messages %s-%s of %s: %d facts extracted, %d new (the rest were "
                "facts already held)", start, end, conversation.pk, len(extraction.facts),
                len(fact_ids))
    return chunk


def _apply_correction(new: LegacyFact, old: LegacyFact, *, created: bool) -> None:
    """The extracted fact `new` corrects the known fact `old` (docs/facts.md "Corrections"), in
    the batch's transaction: fact_supersede locks the author's facts, so racing batches leave
    one current fact. A fact deleted since the batch was sent is simply not corrected. `new`
    was found again (not `created`) when the author had stated it before: an undo keeps it."""
    superseded = fact_supersede(old=old, new=new, new_created=created)
    if superseded is not None:
        logger.info("Fact %s corrected %s", new.pk, superseded.pk)


def _publish_archived(*, conversation: Conversation, chunk: ConversationChunk,
                      fact_ids: list[object]) -> None:
    """The webhook events of one archive batch, sent once its transaction commits."""
    start, end = chunk.message_range_start, chunk.message_range_end
    common = {"conversation_id": str(conversation.pk), "legacy_id": str(conversation.legacy_id),
              "message_range": [start, end]}
    fully = end >= Message.objects.filter(conversation=conversation).count()
    events.publish(events.CONVERSATION_ARCHIVED, user_id=conversation.user_id, data={
        **common, "chunk_id": str(chunk.pk), "fully_archived": fully,
    })
    if fact_ids:
        events.publish(events.FACTS_EXTRACTED, user_id=conversation.user_id, data={
            **common, "fact_ids": [str(pk) for pk in fact_ids], "count": len(fact_ids),
        })


@dataclass(frozen=True)
class CatchUpResult:
    rolling_summary: ConversationMemory | None
    chunks: list[ConversationChunk]
    more_due: bool
    error: str = ""
    # The conversation was deleted while the job ran; it stopped, and nothing of it is left.
    deleted: bool = False


class _Backlog:
    """What one catch-up knows of the archive backlog, so that a long one (an import) costs no
    count per batch and one read of messages for several batches. The message count is read
    once, at the start: messages are only appended, so a full batch it shows due is exactly
    what archive_range_due would answer (the job holds the archive lock, so only it moves
    the archived end); anything else (a tail, or the end of what it saw) is asked of
    archive_range_due, which counts again."""

    def __init__(self, *, archived_end: int, total: int):
        self.archived_end = archived_end
        self.total = total
        self._lines: dict[int, TranscriptLine] = {}

    @classmethod
    def read(cls, conversation: Conversation) -> "_Backlog":
        return cls(archived_end=selectors.last_summarized_end(conversation=conversation),
                   total=Message.objects.filter(conversation=conversation).count())

    def full_batch_due(self, *, final: bool) -> tuple[int, int] | None:
        start, end = self.archived_end, self.archived_end + settings.SUMMARIZATION_BATCH_SIZE
        unsummarized = self.total - start
        if end > self.total or (not final and unsummarized <= settings.SUMMARIZATION_THRESHOLD):
            return None
        return start, end

    def lines(self, conversation: Conversation, *, start: int, end: int,
              batches: int) -> list[TranscriptLine]:
        """Messages [start, end), read with those of the next `batches` - 1 batches when they
        are not read yet."""
        if any(sequence not in self._lines for sequence in range(start, end)):
            upto = max(end, min(start + batches * settings.SUMMARIZATION_BATCH_SIZE, self.total))
            self._lines = {line.sequence: line for line in
                           transcript_lines(conversation=conversation, start=start, end=upto)}
        return [self._lines[sequence] for sequence in range(start, end) if sequence in self._lines]


def _try_archive_lock(conversation: Conversation) -> bool:
    key = conversation.pk.int & 0x7FFFFFFF
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [LockNamespace.ARCHIVE.value, key])
        return bool(cursor.fetchone()[0])


def _release_archive_lock(conversation: Conversation) -> None:
    key = conversation.pk.int & 0x7FFFFFFF
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [LockNamespace.ARCHIVE.value, key])


def _archive_failed(conversation: Conversation, exc: Exception) -> None:
    """Count one more archive failure in a row; the sweep backs off on it."""
    try:
        Conversation.objects.filter(pk=conversation.pk).update(
            archive_failures=F("archive_failures") + 1, archive_failed_at=timezone.now(),
            archive_error=f"{type(exc).__name__}: {exc}"[:2000],
        )
    except DatabaseError:
        # The database itself may be what failed; the range stays due either way.
        logger.exception("Could not record the archive failure of %s", conversation.pk)


def _archive_succeeded(conversation: Conversation) -> None:
    Conversation.objects.filter(pk=conversation.pk, archive_failures__gt=0).update(
        archive_failures=0, archive_failed_at=None, archive_error=""
    )


def _budget_left(started: float) -> float:
    return settings.SUMMARIZATION_JOB_TIME_BUDGET_SECONDS - (time.monotonic() - started)


def _wait_for_archive_lock(conversation: Conversation, *, until: float) -> bool:
    """The conversation's archive lock, tried again while another worker holds it, until the
    monotonic time `until`."""
    while not _try_archive_lock(conversation):
        if time.monotonic() >= until:
            return False
        time.sleep(0.2)
    return True


def _archive_said_earlier(*, conversation: Conversation, final: bool, started: float) -> bool:
    """Before a batch of `conversation` is archived, what its user said earlier about the
    legacy in other conversations and is not archived yet, earliest first (due or not: an open
    conversation's tail too): a batch's corrections are made to the facts filed before it
    (facts_for_correction), so "Sorry, it was 1962" in a new conversation corrects the fact
    just said in the last one even when the two jobs run at once, or the last one is still
    open (before, the later batch often ran first and corrected an older fact instead, or
    nothing, and the fact said first was filed afterwards and stood).

    One being archived by another worker is waited for: all such waits together at most
    SUMMARIZATION_ORDER_WAIT_SECONDS and half the job's time budget, so that the job always has
    time for its own batch; past that, one is left to its own job. One whose archive fails is
    recorded as failed (its backoff) and left; one with batches left after those said earlier
    has its job queued (it skipped them while this job held its lock). False when the job's
    time budget went on earlier batches (this conversation's work waits for the next job)."""
    due = archive_range_due(conversation=conversation, final=final)
    before = due and selectors.message_said_at(conversation=conversation, sequence=due[0])
    if before is None:
        return True
    until = time.monotonic() + min(settings.SUMMARIZATION_ORDER_WAIT_SECONDS,
                                   max(_budget_left(started), 0) / 2)
    for earlier in selectors.unarchived_said_before(conversation=conversation, before=before):
        if not _wait_for_archive_lock(earlier, until=until):
            logger.info("Archiving %s before %s: busy elsewhere; going on", earlier.pk,
                        conversation.pk)
            continue
        try:
            in_time = _archive_before(earlier, before=before, started=started)
            left = archive_range_due(
                conversation=earlier, final=earlier.status == Conversation.Status.SHUTDOWN_CLEAN)
        finally:
            _release_archive_lock(earlier)
        if left is not None:
            queue.enqueue_summarization(conversation_id=earlier.pk, respect_backoff=True)
        if not in_time:
            return False
    return True


def _archive_before(conversation: Conversation, *, before: datetime, started: float) -> bool:
    """Archive the conversation's batches whose first message was said before `before`,
    holding its archive lock, due or not: an open conversation's tail below the threshold too
    (a shorter batch, as a closed conversation's last), since the later batch may correct what
    it says. False when the job's time budget ran out first. A failure, of any kind, is the
    conversation's (recorded for its backoff), not the job's."""
    while True:
        due = archive_range_due(conversation=conversation, final=True)
        if due is None:
            return True
        said = selectors.message_said_at(conversation=conversation, sequence=due[0])
        if said is None or said >= before:
            return True
        if _budget_left(started) <= 0:
            return False
        try:
            chunk = chunk_archive_range(conversation=conversation, start=due[0], end=due[1])
        except ConversationGone:
            return True
        except Exception as exc:  # noqa: BLE001 - another conversation's failure is its own
            logger.warning("Archiving messages %s-%s of %s failed; will retry: %s",
                           due[0], due[1], conversation.pk, exc, exc_info=True)
            _archive_failed(conversation, exc)
            return True
        if chunk is None:
            return True
        _archive_succeeded(conversation)


def conversation_catch_up(*, conversation: Conversation, respect_backoff: bool = False) -> CatchUpResult:
    """The summarisation job's work: the rolling summary, then archived batches oldest first,
    at most SUMMARIZATION_MAX_BATCHES_PER_JOB of them, and no new batch once the job has run
    for SUMMARIZATION_JOB_TIME_BUDGET_SECONDS (so that a job ends well inside Q_TIMEOUT, see
    conversations.checks). A closed conversation archives its tail too. `more_due` says that
    batches remain for another job.

    With `respect_backoff` (the sweep's jobs), the rolling summary or the archive is skipped
    while its failures in a row are backing off (`selectors.rolling_summary_retry_times`); an archive
    failure counts towards that backoff, a successful batch resets it.

    A conversation deleted while the job runs stops it with `deleted` set; what it was
    writing is not stored (ConversationGone)."""
    try:
        return _catch_up(conversation=conversation, respect_backoff=respect_backoff)
    except ConversationGone:
        logger.info("Conversation %s was deleted while it was being summarised; stopped",
                    conversation.pk)
        return CatchUpResult(rolling_summary=None, chunks=[], more_due=False, deleted=True)


def _catch_up(*, conversation: Conversation, respect_backoff: bool) -> CatchUpResult:
    """conversation_catch_up without the stop on ConversationGone."""
    started = time.monotonic()
    final = conversation.status == Conversation.Status.SHUTDOWN_CLEAN
    now = timezone.now()
    retry = (
        selectors.rolling_summary_retry_times(conversation=conversation) if respect_backoff
        else selectors.RetryTimes(summary=None, archive=None)
    )
    memory = None
    if retry.summary is not None and retry.summary > now:
        logger.debug("Summarizing %s is backing off until %s", conversation.pk, retry.summary)
    else:
        memory = rolling_summary_update(conversation=conversation, final=final)
    chunks: list[ConversationChunk] = []
    if retry.archive is not None and retry.archive > now:
        logger.debug("Archiving %s is backing off until %s", conversation.pk, retry.archive)
        return CatchUpResult(rolling_summary=memory, chunks=chunks, more_due=False)
    if not _archive_said_earlier(conversation=conversation, final=final, started=started):
        # The job's time went on earlier batches (a long import): this one's next job goes on.
        return CatchUpResult(rolling_summary=memory, chunks=chunks, more_due=True)
    # A session-level lock: another worker archiving this conversation makes this job skip
    # the archive instead of paying for the same provider call twice.
    if not _try_archive_lock(conversation):
        logger.debug("Archiving of %s is in progress elsewhere", conversation.pk)
        return CatchUpResult(rolling_summary=memory, chunks=chunks, more_due=False)
    try:
        backlog = _Backlog.read(conversation)
        while (
            len(chunks) < settings.SUMMARIZATION_MAX_BATCHES_PER_JOB
            and time.monotonic() - started < settings.SUMMARIZATION_JOB_TIME_BUDGET_SECONDS
        ):
            due = backlog.full_batch_due(final=final) or archive_range_due(
                conversation=conversation, final=final
            )
            if due is None:
                return CatchUpResult(rolling_summary=memory, chunks=chunks, more_due=False)
            try:
                chunk = chunk_archive_range(
                    conversation=conversation, start=due[0], end=due[1],
                    lines=backlog.lines(
                        conversation, start=due[0], end=due[1],
                        batches=settings.SUMMARIZATION_MAX_BATCHES_PER_JOB - len(chunks),
                    ),
                )
            except (LLMError, EmbeddingError, DatabaseError) as exc:
                logger.warning("Archiving messages %s-%s of %s failed; will retry: %s",
                               due[0], due[1], conversation.pk, exc)
                _archive_failed(conversation, exc)
                return CatchUpResult(rolling_summary=memory, chunks=chunks, more_due=False,
                                     error=f"{type(exc).__name__}: {exc}")
            if chunk is None:
                return CatchUpResult(rolling_summary=memory, chunks=chunks, more_due=False)
            if not chunks:
                _archive_succeeded(conversation)
            chunks.append(chunk)
            backlog.archived_end = chunk.message_range_end
        more = archive_range_due(conversation=conversation, final=final) is not None
        return CatchUpResult(rolling_summary=memory, chunks=chunks, more_due=more)
    finally:
        _release_archive_lock(conversation)


def conversations_close_idle() -> list[Conversation]:
    """Close every conversation idle for longer than CONVERSATION_IDLE_CLOSE_MINUTES."""
    cutoff = timezone.now() - timedelta(minutes=settings.CONVERSATION_IDLE_CLOSE_MINUTES)
    closed = []
    for conversation in selectors.conversations_idle_since(cutoff=cutoff):
        try:
            closed.append(message_services.conversation_close(conversation=conversation))
        except NotFound:
            logger.info("Conversation %s was deleted before it could be closed", conversation.pk)
    return closed
