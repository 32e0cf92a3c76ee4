"""The context packet of the next LLM call (seed 004's ConversationContextPacket, extended).

The rows of each block of the system prompt are read once (the search's by
conversations.retrieval, the others by one statement, conversations.selectors.context_rows)
and rendered by conversations.prompt, in its cache-friendly order; the system prompt is
followed by the messages: the last CONTEXT_RAW_TURNS turns verbatim, both roles, whatever the
state of the rolling summary (seed 004), and before them the gap after the latest completed
rolling summary (seed 002), or the last CONTEXT_RECENT_MESSAGES when no summary is ready.
Everything stored that users wrote reaches the prompt inside a fence, as data.

The packet always fits CONTEXT_TOKEN_BUDGET (tiktoken; each text is counted once per packet,
the system prompt again only after a cut changed it). Over budget, parts are cut in
CUT_ORDER, the raw turns last; the persona instructions and the date-time line are never cut,
the conversation's persona only when it alone does not fit (a row older than
PERSONA_MAX_TOKENS, or a budget lowered later).
"""

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from agent_memory.models import AgentMemory, Place
from conversations import checkpoint, prompt
from conversations.models import Conversation, ConversationMemory, Message
from conversations.prompt import Section
from conversations.retrieval import SearchHit, search_conversations
from conversations.selectors import ContextRows, context_rows
from facts.models import LegacyFact
from facts.selectors import corrections_said_in
from memory_site.core.ai import count_tokens, truncate_to_tokens

# OpenAI's chat format spends a few tokens per message on the role and separators.
TOKENS_PER_MESSAGE = 4
REPLAYED_ROLES = (Message.Role.USER, Message.Role.ASSISTANT)

# What goes first when the packet is over budget. Never cut: the persona instructions and the
# date-time line.
CUT_ORDER = (
    "retrieved",          # lowest-ranked unit first
    "messages",           # replayed messages before the raw turns, oldest first
    "session_state",      # whole block
    "rolling_summary",    # whole block
    "facts",              # the newest line of the author holding most of the block first
    "places",             # last line first
    "memory",             # last line first
    "raw_turns",          # the last CONTEXT_RAW_TURNS turns, oldest message first; the latest stays
    "persona",            # only when it alone does not fit: cut, keeping its beginning
    "latest_message",     # truncated to what is left, keeping its beginning
)


@dataclass
class ContextPacket:
    conversation: Conversation
    sections: list[Section]
    messages: list[Message]
    latest_content: str | None  # the latest message's content as sent (possibly truncated)
    # The last CONTEXT_RAW_TURNS turns as read (tool messages included): replayed messages from
    # the first of them on are cut last.
    raw_turns: list[list[Message]]
    compiled_at: datetime
    cuts: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    query: str = ""
    job_refs: list[str] | None = None  # checkpoint.active_job_refs, when already read
    # Token counts, each text counted once per packet: a replayed message's content (or its
    # truncation) and a section's text by text, the system prompt in one slot (it changes with
    # every cut, and only the latest is asked for again).
    _text_tokens: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    _prompt_tokens: tuple[str, int] = field(default=("", 0), init=False, repr=False)

    # --- What the packet shows, read from its sections' rows (nothing is parsed back) ---

    @property
    def raw_from_sequence(self) -> int | None:
        """The first message of the raw turns; None without any."""
        return self.raw_turns[0][0].sequence if self.raw_turns else None

    @property
    def memories(self) -> list[AgentMemory]:
        """The agent memories in the prompt (after the budget cuts), in prompt order."""
        return self.section("memory").rows

    @property
    def places(self) -> list[Place]:
        return self.section("places").rows

    @property
    def place_lines(self) -> list[str]:
        """The places lines of the prompt, as the model reads them."""
        return [line.text for line in self.section("places").lines]

    @property
    def facts(self) -> list[LegacyFact]:
        return self.section("facts").rows

    @property
    def retrieved(self) -> list[SearchHit]:
        return self.section("retrieved").rows

    @property
    def rolling_summary(self) -> ConversationMemory | None:
        """The rolling summary in the prompt; None without one, or when it was cut."""
        return next(iter(self.section("rolling_summary").rows), None)

    @property
    def system_prompt(self) -> str:
        return "\n\n".join(text for s in self.sections if (text := s.render()))

    # --- Seed 004's ConversationContextPacket fields ---

    @cached_property
    def session_state(self) -> dict[str, Any]:
        return checkpoint.session_state(self.conversation, job_refs=self.job_refs)

    @cached_property
    def recent_turn_summaries(self) -> list[str]:
        return checkpoint.recent_turn_summaries(turns=self.raw_turns)

    @cached_property
    def last_response_type(self) -> str | None:
        return checkpoint.last_response_type(self.conversation, turns=self.raw_turns)

    @property
    def resolved_entities_map(self) -> dict[str, str]:
        """Subject of a memory in the packet → its id."""
        return {memory.subject: memory.pk for memory in self.memories if memory.subject}

    def section(self, name: str) -> Section:
        return next(s for s in self.sections if s.name == name)

    def chat_messages(self) -> list[dict[str, str]]:
        """The `messages` of an OpenAI chat call: the system prompt, then the replayed messages."""
        replayed = [{"role": m.role, "content": m.content} for m in self.messages]
        if replayed and self.latest_content is not None:
            replayed[-1] = {"role": replayed[-1]["role"], "content": self.latest_content}
        return [{"role": "system", "content": self.system_prompt}, *replayed]

    def token_counts(self) -> dict[str, int]:
        counts = {s.name: self._count(s.render()) for s in self.sections}
        chat = self.chat_messages()
        counts["messages"] = self.tokens(chat[1:])
        counts["total"] = self.tokens(chat)
        counts["budget"] = settings.CONTEXT_TOKEN_BUDGET
        return counts

    def total_tokens(self) -> int:
        """total_tokens(self.chat_messages()), each text counted once per packet."""
        return self.tokens(self.chat_messages())

    def tokens(self, messages: list[dict[str, str]]) -> int:
        """total_tokens(messages), for messages of this packet's chat_messages()."""
        return sum(
            self._count(m["content"], system=m["role"] == "system") + TOKENS_PER_MESSAGE
            for m in messages
        )

    def text_tokens(self, text: str) -> int:
        """The tokens of `text` counted alone (once per packet)."""
        return self._count(text)

    def _count(self, text: str, *, system: bool = False) -> int:
        if system:
            if self._prompt_tokens[0] != text:
                self._prompt_tokens = (text, count_tokens(text))
            return self._prompt_tokens[1]
        tokens = self._text_tokens.get(text)
        if tokens is None:
            tokens = self._text_tokens[text] = count_tokens(text)
        return tokens


def total_tokens(messages: list[dict[str, str]]) -> int:
    return sum(count_tokens(m["content"]) + TOKENS_PER_MESSAGE for m in messages)


@dataclass(frozen=True)
class ReplayedMessages:
    """What the packet replays after the system prompt."""

    summary: ConversationMemory | None
    messages: list[Message]
    raw_turns: list[list[Message]]  # the checkpoint's last turns, read once for the packet


def replayed_messages(rows: ContextRows) -> ReplayedMessages:
    """The raw turns (the checkpoint's last CONTEXT_RAW_TURNS turns, seed 004) and, before
    them, seed 002's read: the messages after the latest completed summary or, without a
    summary, the last CONTEXT_RECENT_MESSAGES (seed 000). Only user and assistant messages are
    replayed; tool results live on in the assistant's reply.

    `rows` (conversations.selectors.context_rows) holds the messages of every role from the
    first of either: the replayed messages are its user and assistant messages, the raw turns
    its messages from the first of the last CONTEXT_RAW_TURNS user messages on."""
    turns = settings.CONTEXT_RAW_TURNS
    read = rows.messages
    # The read holds all of the last `turns` user messages (it starts at or before the first).
    users = [m.sequence for m in read if m.role == Message.Role.USER]
    raw_from = users[-min(turns, len(users))] if users and turns >= 1 else None
    return ReplayedMessages(
        summary=rows.summary,
        messages=[m for m in read if m.role in REPLAYED_ROLES],
        raw_turns=[] if raw_from is None else checkpoint.group_turns(
            m for m in read if m.sequence >= raw_from
        ),
    )


def _retrieve(
    conversation: Conversation, query: str, warnings: list[str]
) -> list[SearchHit]:
    if not query.strip() or settings.CONTEXT_RETRIEVAL_TOP_K < 1:
        return []
    result = search_conversations(
        user=conversation.user,
        legacy=conversation.legacy,
        query=query.strip()[: settings.SEARCH_QUERY_MAX_CHARS],
        k=settings.CONTEXT_RETRIEVAL_TOP_K,
        exclude_conversation_ids=[conversation.pk],
    )
    # A turn still works with a degraded retrieval; the packet says what is missing.
    warnings.extend(result.warnings)
    return result.hits


def _corrections(conversation: Conversation, hits: list[SearchHit]) -> dict[str, list[str]]:
    """hit id → what the user later corrected in it, as the current facts say it now: an
    earlier conversation keeps its words ("married in 1961"), the prompt says they were
    corrected ("1962"), so the model is not left with two answers."""
    if not hits:
        return {}
    pairs = corrections_said_in(
        user=conversation.user, legacy=conversation.legacy,
        conversation_ids={hit.conversation_id for hit in hits},
    )
    notes: dict[str, list[str]] = {}
    for hit in hits:
        for old, current in pairs:
            start, end = old.source_range_start, old.source_range_end
            if (old.source_conversation_id == hit.conversation_id and start is not None
                    and end is not None and start < hit.message_range_end
                    and hit.message_range_start < end
                    and current.content not in notes.get(hit.id, [])):
                notes.setdefault(hit.id, []).append(current.content)
    return notes


def build_context(
    *, conversation: Conversation, query: str | None = None, now: datetime | None = None,
    through: int | None = None,
) -> ContextPacket:
    """The packet for the next LLM call in `conversation`, as its own user sees it.

    `query` drives retrieval; without one, the latest user message does. `through`: the
    sequence of the message the call answers (a turn's user message), which the messages end
    at; a later message, or a summary of one, is not shown (None: the conversation as it
    stands).
    """
    rows = context_rows(conversation=conversation, recent=settings.CONTEXT_RECENT_MESSAGES,
                        turns=settings.CONTEXT_RAW_TURNS, through=through)
    replayed = replayed_messages(rows)
    summary, messages = replayed.summary, replayed.messages
    if query is None or not query.strip():
        latest_user = next((m for m in reversed(messages) if m.role == Message.Role.USER), None)
        # With raw turns the read above holds the latest user message whenever there is one;
        # only without them can it lie before what is replayed.
        if latest_user is None and settings.CONTEXT_RAW_TURNS < 1:
            users = Message.objects.filter(conversation=conversation, role=Message.Role.USER)
            if through is not None:
                users = users.filter(sequence__lte=through)
            latest_user = users.order_by("-sequence").first()
        query = latest_user.content if latest_user else ""
    warnings: list[str] = []
    hits = _retrieve(conversation, query, warnings)
    compiled_at = now or timezone.now()
    sections = [
        prompt.persona_section(conversation),
        prompt.memory_section(rows.memories),
        prompt.places_section(rows.places),
        prompt.datetime_section(compiled_at),
        prompt.facts_section(rows.facts, legacy_name=conversation.legacy.name,
                             also_called=rows.called_names),
        prompt.retrieved_section(hits, corrections=_corrections(conversation, hits)),
        prompt.summary_section(summary),
        prompt.session_state_section(conversation),
    ]
    packet = ContextPacket(
        conversation=conversation, sections=sections, messages=messages, latest_content=None,
        raw_turns=replayed.raw_turns, compiled_at=compiled_at,
        warnings=warnings, query=query, job_refs=rows.job_refs,
    )
    _fit_budget(packet)
    return packet


def _cut_steps(packet: ContextPacket) -> dict[str, Callable[[], dict[str, Any] | None]]:
    budget = settings.CONTEXT_TOKEN_BUDGET

    def pop_message(part: str) -> Callable[[], dict[str, Any] | None]:
        """The oldest replayed message; `messages` stops at the raw turns, `raw_turns` at the
        latest message."""
        def cut() -> dict[str, Any] | None:
            if len(packet.messages) <= 1:
                return None
            message = packet.messages[0]
            raw = (packet.raw_from_sequence is not None
                   and message.sequence >= packet.raw_from_sequence)
            if raw != (part == "raw_turns"):
                return None
            packet.messages.pop(0)
            return {"part": part, "item": {"sequence": message.sequence, "role": message.role}}
        return cut

    def cut_persona() -> dict[str, Any] | None:
        section = packet.section("persona")
        if not section.lines:
            return None
        latest_content = packet.latest_content
        packet.latest_content = "" if packet.messages else None
        alone_fits = packet.total_tokens() <= budget
        packet.latest_content = latest_content
        if alone_fits:
            return None  # the latest message is truncated instead
        persona = prompt.fence(packet.conversation.persona)
        section.lines.clear()
        # What is left with the latest message whole, less the block's own words and fence.
        limit = budget - packet.total_tokens() - count_tokens(prompt.persona_block(""))
        kept = ""
        while limit > 0:
            kept = truncate_to_tokens(persona, limit)
            section.lines = [prompt.Line(prompt.persona_block(kept))]
            over = packet.total_tokens() - budget
            if over <= 0:
                break
            # Tokens merge across the joins: take off the overflow and try again.
            limit -= over
            section.lines.clear()
            kept = ""
        kept_tokens, tokens = count_tokens(kept), count_tokens(persona)
        packet.warnings.append(
            f"The persona ({tokens} tokens) does not fit CONTEXT_TOKEN_BUDGET={budget}: "
            + (f"only its first {kept_tokens} tokens were used." if kept else "it was left out.")
        )
        return {"part": "persona", "item": {"kept_tokens": kept_tokens, "tokens": tokens}}

    def truncate_latest() -> dict[str, Any] | None:
        if not packet.messages:
            return None
        others = packet.chat_messages()[:-1]
        room = budget - packet.tokens(others) - TOKENS_PER_MESSAGE
        latest = packet.messages[-1].content
        packet.latest_content = truncate_to_tokens(latest, room)
        return {"part": "latest_message", "item": {
            "sequence": packet.messages[-1].sequence, "kept_tokens": max(room, 0),
        }}

    return {
        "messages": pop_message("messages"),
        "session_state": lambda: _drop_section(packet, "session_state"),
        "rolling_summary": lambda: _drop_section(packet, "rolling_summary"),
        "raw_turns": pop_message("raw_turns"),
        "persona": cut_persona,
        "latest_message": truncate_latest,
    }


def _drop_section(packet: ContextPacket, name: str) -> dict[str, Any] | None:
    section = packet.section(name)
    if not section.lines:
        return None
    section.lines.clear()
    return {"part": name, "item": None}


def _describe(line: prompt.Line) -> Any:
    """What a cut took: a retrieved unit {id, kind, score}, a fact {id}, or the line's text
    (a memory, a place, a heading)."""
    if isinstance(line.row, SearchHit):
        return {"id": line.row.id, "kind": line.row.kind, "score": line.row.score}
    if isinstance(line.row, LegacyFact):
        return {"id": str(line.row.pk)}
    return line.text


# The parts of the system prompt cut before the raw turns, in CUT_ORDER.
_SECTION_PARTS = ("retrieved", "session_state", "rolling_summary", "facts", "places", "memory")


# The parts cut a line at a time (_cut_lines).
_LINE_PARTS = ("retrieved", "facts", "places", "memory")
# How many tokens more than its own a line may take from the prompt when it is cut: the line
# break joining it and what merges across it.
_JOIN_SLACK = 3


def _cut_lines(packet: ContextPacket, part: str, budget: int, *,
               order: list[int] | None = None,
               measure: Callable[[], int] | None = None) -> None:
    """Cut the section's lines in `order` (their indices; by default the last first) while
    `measure` (the packet's tokens) is over `budget`; the lines left keep their order. The
    same lines as counting again after every cut, counting again only when the lines' own
    counts say it may fit (within _JOIN_SLACK a line cut since): counting after every cut
    made a packet's cost quadratic in the lines, and with 3,000 facts shared by the family a
    packet took a minute."""
    measure = measure or packet.total_tokens
    section = packet.section(part)
    lines = list(section.lines)
    removed: set[int] = set()

    def keep() -> None:
        section.lines = [line for index, line in enumerate(lines) if index not in removed]

    total, uncounted = measure(), 0
    for index in order if order is not None else range(len(lines) - 1, -1, -1):
        if uncounted and total <= budget + _JOIN_SLACK * uncounted:
            keep()
            total, uncounted = measure(), 0
        if total <= budget:
            break
        removed.add(index)
        packet.cuts.append({"part": part, "item": _describe(lines[index])})
        total -= packet.text_tokens(lines[index].text)
        uncounted += 1
    keep()


def _fair_cut_order(lines: list[prompt.Line], tokens: Callable[[str], int],
                    reader_id: Any = None) -> list[int]:
    """The facts' lines in the order they are cut: other members' first, always the newest
    line of the author whose lines hold the most tokens still (ties: the newer line first),
    then the reader's own, newest first. A family member who shares hundreds of long facts has
    theirs cut before anyone else's: cut newest first, they took the whole block and kept out
    every fact learned after them, the reader's own included; and members added for the
    purpose, each with a fair share, still crowded the reader's own out (both found by a
    hostile relative). With one author, newest first, as before."""
    own = [index for index, line in enumerate(lines)
           if reader_id is not None and getattr(line.row, "user_id", None) == reader_id]
    by_author: dict[Any, list[tuple[int, int]]] = {}
    totals: dict[Any, int] = {}
    for index, line in enumerate(lines):
        author = getattr(line.row, "user_id", None)
        if reader_id is not None and author == reader_id:
            continue
        count = tokens(line.text)
        by_author.setdefault(author, []).append((index, count))
        totals[author] = totals.get(author, 0) + count
    heap = [(-totals[a], -rows[-1][0], i) for i, (a, rows) in enumerate(by_author.items())]
    authors = list(by_author)
    heapq.heapify(heap)
    order = []
    while heap:
        total, _, slot = heapq.heappop(heap)
        rows = by_author[authors[slot]]
        index, count = rows.pop()
        order.append(index)
        if rows:
            heapq.heappush(heap, (total + count, -rows[-1][0], slot))
    return order + own[::-1]


def _facts_cut_order(packet: ContextPacket) -> list[int]:
    return _fair_cut_order(packet.section("facts").lines, packet.text_tokens,
                           packet.conversation.user_id)


def _cap_facts(packet: ContextPacket) -> None:
    """The facts block cut (in _fair_cut_order) to CONTEXT_FACTS_MAX_SHARE of the budget, before
    anything else is cut: an author of thousands of facts (a long imported history) had the
    retrieved units, the session state and the rolling summary cut for them, and the agent
    saw facts only."""
    section = packet.section("facts")
    cap = int(settings.CONTEXT_TOKEN_BUDGET * settings.CONTEXT_FACTS_MAX_SHARE)
    _cut_lines(packet, "facts", cap, order=_facts_cut_order(packet),
               measure=lambda: packet.text_tokens(section.render()))


def _cut_in_order(packet: ContextPacket, parts: tuple[str, ...]) -> None:
    budget = settings.CONTEXT_TOKEN_BUDGET
    steps = _cut_steps(packet)
    if "facts" in parts:
        _cap_facts(packet)
    for part in parts:
        if part in _LINE_PARTS:
            _cut_lines(packet, part, budget,
                       order=_facts_cut_order(packet) if part == "facts" else None)
            continue
        while packet.total_tokens() > budget:
            cut = steps[part]()
            if cut is None:
                break
            packet.cuts.append(cut)
            if part in ("persona", "latest_message"):  # cut once, as far as needed
                break


def _fit_budget(packet: ContextPacket) -> None:
    budget = settings.CONTEXT_TOKEN_BUDGET
    if packet.total_tokens() <= budget:
        return  # the usual case: nothing to cut (and no prompt rendered once per part)
    kept = [(section, list(section.lines)) for section in packet.sections]
    replayed = list(packet.messages)
    _cut_in_order(packet, CUT_ORDER)
    parts = {cut["part"] for cut in packet.cuts}
    if "raw_turns" in parts and not parts & {"persona", "latest_message"}:
        # The raw turns were cut with every block above them cut first; once one long message
        # went, the packet may be far under the budget (a turn of 20,000 characters left 632
        # of 8,000 tokens, every fact and memory cut). The same messages go, and the blocks are
        # cut again from whole, only as far as the budget still needs.
        message_cuts = [cut for cut in packet.cuts if cut["part"] in ("messages", "raw_turns")]
        for section, lines in kept:
            section.lines = lines
        packet.messages = replayed[len(message_cuts):]
        packet.cuts = []
        _cut_in_order(packet, _SECTION_PARTS)
        # Listed in CUT_ORDER, as a single pass lists them.
        packet.cuts = sorted([*packet.cuts, *message_cuts],
                             key=lambda cut: CUT_ORDER.index(cut["part"]))
    if packet.total_tokens() > budget:
        raise ImproperlyConfigured(
            f"CONTEXT_TOKEN_BUDGET={budget} is smaller than the persona instructions and the "
            "date-time line, which are never cut; raise it."
        )
