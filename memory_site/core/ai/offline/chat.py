"""The offline provider's side of an agent turn: deterministic, and honest that no model runs.

It reads the context packet's system prompt (its fenced sections, see conversations/context.py)
to say what it has in front of it, and turns an explicit "remember that …" into an
add_to_memory call, as seed 003's high-confidence auto-store describes. Seed 003's proactive
suggestion works by rules too: "Alec is my boss", "I prefer …" or "her favourite colour was
blue" gets "Would you like me to remember that …?", and a "yes" to that question (which it
reads in the replayed last turns) stores it; a "no" stores nothing. Everything else gets a
plain acknowledgement; the same messages always give the same reply.
"""

import json
import re
from typing import Any

from memory_site.core.ai.base import ChatReply, ToolCall, tool_arguments
from memory_site.core.language.words import AFFIRMATIVE
from memory_site.core.text import quotable

OFFLINE_NOTICE = (
    "(Offline mode: no language model is configured, so this reply is put together by simple "
    "rules from what I remember.)"
)
_REMEMBER = re.compile(
    r"^\s*(?:please\s+)?(?:remember|note)\s+(?:that\s+)?(?P<what>.+?)\s*[.!]?\s*$",
    re.IGNORECASE | re.DOTALL,
)
# A request further in the message, or put another way: "… Please remember that her sister
# Ruth lives in Toledo.", "Could you also remember that …?", "Don't forget that …",
# "Remember: …". Its sentence is what is stored.
_REMEMBER_WITHIN = re.compile(
    r"(?:^|[.!?;]\s+|,\s+)(?:please\s+|so\s+|and\s+)?(?:(?:could|can|would|will) you\s+"
    r"(?:also\s+|please\s+)?)?(?:remember|note|don'?t forget|do not forget)"
    r"(?:\s+that\b|\s*[:,])?\s+(?P<what>[^.!?]+)",
    re.IGNORECASE,
)
# "Remember when we went to the lake?": a memory shared, not one to store.
_REMINISCING = re.compile(r"(?:when|how|the time|that time)\b", re.IGNORECASE)
_FROM_NOW_ON = re.compile(r"^\s*(?:from now on|always|never)\b.+", re.IGNORECASE | re.DOTALL)
_PREFERENCE = re.compile(r"\b(prefer|like|love|hate|always|never|from now on)\b", re.IGNORECASE)
_UNIT_LABEL = re.compile(r"^- \[[^]]*\] ")
# "Please forget that Mom called every Sunday.", "Can you forget about the lake house?": a
# request that starts its message (so "I'll never forget her laugh" is none).
_FORGET = re.compile(
    r"^\s*(?:please\s+)?(?:(?:could|can|would|will) you\s+(?:please\s+)?)?"
    r"(?:forget|delete|remove)\s+(?:that\s+|about\s+|the\s+memory\s+(?:that\s+|about\s+)?)?"
    r"(?P<what>[^,;:.!?]+)",
    re.IGNORECASE,
)
# "Remove nothing, …", "Forget it, …", "Remove all doubt: …": no memory named.
_NOTHING_NAMED = re.compile(
    r"^(?:nothing|none|it|this|that|all|any|every|everything|anything)"
    r"(?:\s+(?:but|except|else|at all|doubt|doubts)\b.*)?$", re.IGNORECASE)
_MEMORY_LINE = re.compile(
    r"^- \[id:(?P<id>[^\]]+)\] (?:\[(?P<subject>[^\]]*)\] )?(?P<content>.*)$")
_WORD = re.compile(r"[a-z0-9']+")
# Words that say nothing of which memory is meant.
_FORGET_STOP = frozenset(["the", "a", "an", "that", "this", "my", "her", "his", "their", "i",
                          "is", "was", "to", "of", "in", "on", "at", "and", "user", "user's",
                          "all", "about", "memory", "note", "i'm", "me"])
FORGET_MATCH = 0.5  # the share of the request's words a memory must hold
FORGET_MIN_WORDS = 2  # and at least this many of them: "remove the photos" names no one memory
OFFER_PREFIX = "Would you like me to remember that "
_OFFER = re.compile(re.escape(OFFER_PREFIX) + r"(?P<what>.+?)\?")
_YES = re.compile(rf"^\s*{AFFIRMATIVE}", re.I)  # the write rule's yes
_NO = re.compile(r"^\s*(?:no|nope|don'?t|do not|not now)\b", re.I)
# What is worth offering to remember: a person's role for the user, a preference, a favourite.
_SUGGEST = re.compile(
    r"^\s*(?P<what>(?:[A-Z][a-z]+ is my [\w' -]+?)|(?:I (?:prefer|like|love|hate) [^.!?]+?)|"
    r"(?:(?:her|his|my) favou?rite (?:[\w]+ ){1,4}?(?:was|is) [^.!?]+?))"
    r"(?:,? by the way)?\s*[.!]?\s*$",
    re.I,
)
MEMORY_CONTENT_MAX = 500
QUOTE_WORDS = 30


def _quote(text: str) -> str:
    """The first words of `text`, to put between “ and ”: its own quotation marks are written as
    apostrophes (quotable), so that the quotation ends where this reply ends it."""
    words = " ".join(quotable(text).split()).split(" ")
    return " ".join(words[:QUOTE_WORDS]) + (" …" if len(words) > QUOTE_WORDS else "")


def _fenced(prompt: str, tag: str) -> list[str]:
    lines = prompt.split("\n")
    inside = False
    found: list[str] = []
    for line in lines:
        if line.strip() == f"<{tag}>":
            inside = True
        elif line.strip() == f"</{tag}>":
            inside = False
        elif inside and line.strip():
            found.append(line.strip())
    return found


def _remember_request(text: str) -> dict[str, str] | None:
    match = _REMEMBER.match(text)
    if match is None or len(match.group("what")) > MEMORY_CONTENT_MAX:
        match = next(reversed(list(_REMEMBER_WITHIN.finditer(text))), match)
    what = match.group("what") if match else (text.strip() if _FROM_NOW_ON.match(text) else "")
    what = " ".join(what.split())
    if len(what) < 5 or _REMINISCING.match(what):
        return None
    what = what[0].upper() + what[1:]
    if len(what) > MEMORY_CONTENT_MAX:  # cut at a word, and say so
        what = what[:MEMORY_CONTENT_MAX - 1].rsplit(" ", 1)[0] + "…"
    return {
        "content": what,
        "category": "preference" if _PREFERENCE.search(what) else "context",
    }


def _words(text: str) -> set[str]:
    """The words that tell memories apart, a plural or third-person "s" dropped ("likes jazz"
    is "like jazz")."""
    return {word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss")
            else word for word in _WORD.findall(text.lower()) if word not in _FORGET_STOP}


def _forget_request(said: str, memories: list[str]) -> tuple[dict[str, str] | None, str]:
    """A request to forget a memory, and the memory it names: (the manage_user_memory call
    that deactivates it, its text), or (None, "") when the message asks nothing of the kind,
    or (None, what) when no memory holds at least FORGET_MATCH of its words (and
    FORGET_MIN_WORDS of them, unless the request names the memory's subject: "Please forget
    Alec"), or two do alike."""
    match = _FORGET.match(said)
    what = " ".join(match.group("what").split()) if match else ""
    wanted = _words(_memory_view(what)) | _words(what) if what else set()
    if len(what) < 2 or not wanted or _NOTHING_NAMED.match(what):
        return None, ""
    scored = []
    for line in memories:
        found = _MEMORY_LINE.match(line)
        if found:
            subject = _words(found.group("subject") or "")
            held = _words(found.group("content")) | subject
            shared = len(wanted & held)
            named = bool(subject) and subject <= wanted
            # Two shared words, or all of a one-word memory ("Forget that I'm vegetarian").
            enough = shared >= min(FORGET_MIN_WORDS, len(held))
            scored.append((shared / len(wanted), named or enough, found.group("id")))
    scored.sort(reverse=True)
    if not scored or scored[0][0] < FORGET_MATCH or not scored[0][1] or (
            len(scored) > 1 and scored[1][:2] == scored[0][:2]):
        return None, what
    return {"operation": "deactivate_fact", "fact_id": scored[0][2]}, what


def _agent_view(text: str) -> str:
    """The user's words as the agent says them back: "my" → "your", "I" → "you"."""
    text = re.sub(r"\bmy\b", "your", text, flags=re.I)
    text = re.sub(r"\bI'?m\b", "you're", text)
    text = re.sub(r"\bI\b", "you", text)
    return re.sub(r"^(Her|His|Their)\b", lambda m: m.group(1).lower(), text)


def _memory_view(text: str) -> str:
    """The agent's words about the user as a stored memory: "your boss" → "the user's boss"."""
    text = re.sub(r"\byou're\b", "the user is", text, flags=re.I)
    text = re.sub(r"\byour\b", "the user's", text, flags=re.I)
    text = re.sub(r"\byou\b", "the user", text, flags=re.I)
    return text[0].upper() + text[1:]


def _last_offer(earlier: list[dict[str, Any]]) -> str | None:
    """What the agent's latest reply offered to remember, if it made the offer itself: the
    reply starts with it. An offer-shaped sentence the reply only quotes (a fact another member
    wrote, an earlier conversation) is not the agent's offer."""
    reply = next((m.get("content") or "" for m in reversed(earlier)
                  if m.get("role") == "assistant"), "")
    match = _OFFER.match(reply)
    return match.group("what") if match else None


def _confirmed_offer(earlier: list[dict[str, Any]], said: str) -> dict[str, str] | None:
    """A "yes" to the agent's offer: the offered memory, as an add_to_memory request."""
    what = _last_offer(earlier) if _YES.match(said) else None
    if not what:
        return None
    content = _memory_view(what)[:MEMORY_CONTENT_MAX]
    person = re.match(r"^([A-Z][a-z]+) is the user's ", content)
    if person:
        return {"content": content, "category": "person", "subject": person.group(1)}
    return {"content": content,
            "category": "preference" if _PREFERENCE.search(content) else "context"}


def _deletions(messages: list[dict[str, Any]]) -> bool:
    """Whether the calls these tool results answer were deletions (the assistant message before
    them made them), so that a held-back one is told as nothing forgotten."""
    return any(_operation(call) == "deactivate_fact"
               for message in messages for call in message.get("tool_calls") or [])


def _operation(call: dict[str, Any]) -> object:
    """A tool call's `operation` argument (its arguments as sent: JSON text or an object)."""
    arguments = tool_arguments((call.get("function") or {}).get("arguments") or {})
    return None if arguments is None else arguments.get("operation")


def _after_tools(tool_results: list[dict[str, Any]], deleting: bool = False) -> str:
    parts = []
    for result in tool_results:
        if result.get("ok") and result.get("result", {}).get("deactivated"):
            parts.append(f"Done — I've forgotten that memory [id:{result['result']['fact_id']}]. "
                         "It no longer comes into our conversations.")
        elif result.get("ok"):
            stored = result.get("result", {})
            parts.append(
                f"Noted — I'll remember that: {stored.get('content', '')} "
                f"[id:{stored.get('memory_id', '?')}]"
            )
        elif result.get("code") == "not_confirmed" and deleting:
            parts.append("I haven't forgotten anything. If you'd like me to, say \"forget that "
                         "…\" and I will.")
        elif result.get("code") == "not_confirmed":
            # The write rule's reason is written for the model; the user reads a question.
            parts.append("I haven't saved anything. If you'd like me to remember it, say "
                         "\"remember that …\" and I will.")
        else:
            parts.append(f"I couldn't store that: {result.get('detail', 'unknown error')}")
    return f"{' '.join(parts)} {OFFLINE_NOTICE}"


def offline_chat_reply(*, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    last_user_index = max(
        (i for i, m in enumerate(messages) if m.get("role") == "user"), default=None
    )
    if last_user_index is None:
        return ChatReply(content=f"Hello. {OFFLINE_NOTICE}")
    # Whitespace folded before any pattern reads it: a run of spaces (or tabs, or line breaks)
    # is one space, so no pattern can split a long run in many ways (a message of "I love x",
    # 2,000 spaces and "y" took 9 s, 20,000 characters could take hours).
    said = " ".join((messages[last_user_index].get("content") or "").split())
    tool_results = [
        json.loads(m.get("content") or "{}")
        for m in messages[last_user_index + 1:]
        if m.get("role") == "tool"
    ]
    if tool_results:
        return ChatReply(content=_after_tools(
            tool_results, deleting=_deletions(messages[last_user_index + 1:])))
    tool_names = {t.get("function", {}).get("name") for t in tools}
    request = _remember_request(said) or _confirmed_offer(messages[:last_user_index], said)
    if request is not None and "add_to_memory" in tool_names:
        return ChatReply(
            content="",
            tool_calls=[ToolCall(id="offline-call-1", name="add_to_memory",
                                 arguments=json.dumps(request, sort_keys=True))],
        )
    memories = [line for line in _fenced(system, "memory-data") if line.startswith("- [id:")]
    forget, named = _forget_request(said, memories)
    if forget is not None and "manage_user_memory" in tool_names:
        return ChatReply(
            content="",
            tool_calls=[ToolCall(id="offline-call-1", name="manage_user_memory",
                                 arguments=json.dumps(forget, sort_keys=True))],
        )
    if named:
        return ChatReply(content=(
            f"I couldn't tell which memory you mean by “{_quote(named)}”, so nothing was "
            "forgotten. Your memories are listed with /memory; /memory delete <id> forgets one. "
            f"{OFFLINE_NOTICE}"))
    if _NO.match(said) and _last_offer(messages[:last_user_index]):
        return ChatReply(content=f"No problem, I won't store that. {OFFLINE_NOTICE}")
    suggestion = _SUGGEST.match(said)
    if suggestion and "add_to_memory" in tool_names:
        what = _agent_view(" ".join(suggestion.group("what").split()))
        return ChatReply(content=f"{OFFER_PREFIX}{what}? {OFFLINE_NOTICE}")
    # One `- [category] …` line per fact; the block's `Person:` line names the legacy.
    facts = [line for line in _fenced(system, "legacy_facts") if line.startswith("- [")]
    earlier = _fenced(system, "earlier_conversations")
    summary = _fenced(system, "conversation_summary")
    sentences = [
        OFFLINE_NOTICE,
        f"You said: “{_quote(said)}”.",
        f"I have {len(memories)} memor{'y' if len(memories) == 1 else 'ies'} about you, "
        f"{len(facts)} fact{'' if len(facts) == 1 else 's'} about the person we remember and "
        f"{len(earlier)} note{'' if len(earlier) == 1 else 's'} from earlier conversations"
        f"{' and a summary of this one' if summary else ''}.",
    ]
    if earlier:
        note = _UNIT_LABEL.sub("", earlier[0])
        sentences.append(f"From an earlier conversation: “{_quote(note)}”.")
    if facts:
        sentences.append(f"One thing I know: “{_quote(facts[0].removeprefix('- '))}”.")
    return ChatReply(content=" ".join(sentences))
