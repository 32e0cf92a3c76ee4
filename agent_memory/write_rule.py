"""The write rule: a memory change the model makes in an agent turn needs the user's word in
that turn, so that text other people wrote (a shared fact, the legacy's name) cannot change or
delete a user's memories through their own agent.

A write tool call (add_to_memory, update_memory, manage_user_memory with add_fact,
deactivate_fact or add_poi) is carried out when the user's message of the turn

1. **asks for it**: it contains a request of the call's kind — to add: "remember", "don't
   forget", "keep (this) in mind", "make a note", "note that", "note:", "save", "store", "from
   now on"; to update: those or "update", "change", "correct", "replace", "edit", "actually",
   "no longer", "anymore"; to delete: "forget", "delete", "remove", "deactivate", "erase" —
   outside what the message quotes, and not negated in its clause ("don't save anything
   about …", "I don't want you to forget …", "never remove …", "I can't remember") nor asked
   about ("do you remember …?"); or
2. **confirms it**: it is a short yes and nothing else ("yes", "yes please", "sure", "ok",
   "go ahead", "please do", …; at most 6 words, no question) and the agent's previous message
   offered a change of the call's kind in a question of its own ("Would you like me to
   remember …?", "Shall I forget …?": an asking phrase, then a word of the change's kind —
   "remember" offers an addition or an update, "forget" a deletion — in a sentence ending with
   a question mark; "Do you remember …?" offers nothing), outside the span from the message's first
   quotation mark to its last, of any style: `memory_site.core.text.outside_quotations`, so that
   text the agent quotes cannot end its quotation early with a mark of its own); or
3. for update_memory only, **states it**: the user's message names the memory (its subject or
   a word of its text) and brings new words for it (seed 003: an update needs no confirmation);

and the text written comes from the user (**grounding**): at least two thirds of the words it
adds (words of three or more letters outside a short list of function words, compared on
their first five letters) appear in the user's message — or, when confirming, in that message
or the offer it confirms. A deletion must name the memory: its id, its subject, or half of
the words of its text, in those same messages.

Reading (get_memory) is never held back. Everything else is refused with the reason, which
the model reads as the tool result (code `not_confirmed`) and the turn records with the call.
"""

import re
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from agent_memory import selectors
from memory_site.core.errors import NotFound
from memory_site.core.text import comparison_key, outside_quotations

ADD, UPDATE, DELETE = "add", "update", "delete"

# Which calls write, and what kind of change each is.
_TOOL_KINDS = {"add_to_memory": ADD, "update_memory": UPDATE}
_OPERATION_KINDS = {"add_fact": ADD, "add_poi": ADD, "deactivate_fact": DELETE}

# Grounding: the share of added words that must come from the user's side of the turn.
GROUNDED_SHARE = 2 / 3
DELETE_NAMED_SHARE = 1 / 2
_STEM = 5

_ADD_WORDS = (
    r"remember|don't forget|do not forget|keep (?:this |that |it )?in mind|make a note"
    r"|note(?:\s+(?:that|this|down)|(?=\s*:))|write (?:that|this|it) down|save|store"
    r"|from now on"
)
_UPDATE_WORDS = r"update|change|correct|replace|edit"
_DELETE_WORDS = r"forget|delete|remove|deactivate|erase"
_REQUESTS = {
    ADD: re.compile(rf"\b(?:{_ADD_WORDS})\b"),
    UPDATE: re.compile(rf"\b(?:{_ADD_WORDS}|{_UPDATE_WORDS}|actually|no longer|any ?more)\b"),
    DELETE: re.compile(rf"\b(?:{_DELETE_WORDS})\b"),
}
# Not a request: a request word negated earlier in its clause, at most three words before it
# ("don't save anything about …", "I don't want you to forget Alec", "never remove …", "I
# can't remember"), or asked about ("do you remember …?"). "Don't forget" itself asks to add.
_NEGATION = re.compile(
    r"\b(?:can't|cant|cannot|can not|couldn't|couldnt|don't|dont|do not|didn't|didnt|did not"
    r"|won't|wont|will not|wouldn't|wouldnt|shouldn't|shouldnt|mustn't|never|not|no need to"
    r"|stop)(?:\s+\S+){0,3}\s*$"
)
# Request words that a negation before them leaves requests: "don't forget" asks to add, and
# "not … anymore" states a change.
_UNNEGATED = frozenset(("don't forget", "do not forget", "actually", "no longer", "anymore",
                        "any more"))
_RECALL_QUESTION = re.compile(r"\b(?:do|did|does) (?:you|he|she|they|we|i) (?:still |even )?$")
_CLAUSE_END = re.compile(r"[,.;:!?()\[\]\u2013\u2014]|\s-\s|\bbut\b")
_AFFIRMATIVE = re.compile(
    r"^(?:yes|yeah|yep|yup|sure|ok|okay|please do|please|go ahead|do it|do that|absolutely"
    r"|of course|definitely|certainly|that's right|right|correct)\b"
)
_NEGATIVE = re.compile(r"\b(?:no|not|don't|do not|never|nope)\b")
_AFFIRMATIVE_MAX_WORDS = 6
# What may follow the yes: more yes, politeness, "remember it". "Sure, tell me more" is no yes.
_YES_WORDS = frozenset((
    "yes", "yeah", "yep", "sure", "ok", "okay", "please", "do", "go", "ahead", "it", "that",
    "thanks", "thank", "you", "of", "course", "absolutely", "definitely", "certainly", "great",
    "lovely", "good", "idea", "remember", "save", "store", "keep", "note", "add", "right",
    "correct", "that's", "i'd", "like", "would", "love", "to",
))
# A question of the reply's own: the text since the last sentence end up to a "?".
_QUESTION = re.compile(r"[^.!?]*\?")
# An offer: the agent asks whether it should make a change ("Would you like me to remember
# …?", "Shall I forget …?"), with a word of the change's kind after it. "Do you remember …?"
# and "Did Sarah keep in touch?" offer nothing.
_OFFER_ASK = (
    r"\b(?:would you like|would you want|do you want|want me to|like me to|shall i|should i"
    r"|can i|could i|may i|let me)\b"
)
_OFFER_WORDS = {
    ADD: r"remember|store|save|note|keep|add|write",
    UPDATE: rf"remember|store|save|note|keep|add|write|{_UPDATE_WORDS}",
    DELETE: _DELETE_WORDS,
}
_OFFERS = {
    kind: re.compile(rf"{_OFFER_ASK}.*\b(?:{words})\b") for kind, words in _OFFER_WORDS.items()
}
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
# Words that carry no content of their own (and the request words): never counted.
FUNCTION_WORDS = frozenset((
    "the", "and", "but", "for", "nor", "yet", "with", "from", "into", "onto", "about", "above",
    "after", "before", "over", "under", "than", "then", "that", "this", "these", "those",
    "there", "here", "what", "which", "who", "whom", "whose", "when", "where", "why", "how",
    "was", "were", "are", "is", "be", "been", "being", "has", "have", "had", "having", "does",
    "did", "doing", "done", "will", "would", "shall", "should", "can", "could", "may", "might",
    "must", "not", "all", "any", "both", "each", "few", "more", "most", "other", "some",
    "such", "only", "own", "same", "very", "just", "also", "too", "she", "her", "hers", "him",
    "his", "they", "them", "their", "theirs", "you", "your", "yours", "our", "ours", "its",
    "it's", "i'm", "i've", "i'd", "i'll", "we're", "we've", "they're", "she's", "he's",
    "that's", "user", "user's", "users", "remember", "forget", "please", "update", "change",
    "memory", "memories", "store", "save", "note",
))


@dataclass(frozen=True)
class TurnWords:
    """What the user said in this turn, and the agent's message just before it (or "")."""

    user_message: str
    previous_reply: str = ""


@dataclass(frozen=True)
class WriteDecision:
    allowed: bool
    kind: str | None  # add, update, delete; None for a call that does not write
    basis: str  # request, confirmation, statement, read; "" when refused
    reason: str = ""


def _normal(text: str) -> str:
    """`text` in the form words are compared in: comparison_key's (case, full-width letters and
    invisible characters make no other word), curly apostrophes straight."""
    return comparison_key(text).replace("\u2019", "'").replace("\u2018", "'")


def _stems(text: str) -> set[str]:
    stems = set()
    for word in _WORD.findall(_normal(text)):
        word = word.removesuffix("'s")
        if len(word) >= 3 and word not in FUNCTION_WORDS:
            stems.add(word[:_STEM])
    return stems


def write_kind(name: str, arguments: dict[str, Any]) -> str | None:
    """ADD, UPDATE or DELETE for a call that writes; None for a read or an unknown call (the
    tool answers those without writing)."""
    if name == "manage_user_memory":
        return _OPERATION_KINDS.get(arguments.get("operation"))
    return _TOOL_KINDS.get(name)


def _asks(kind: str, text: str) -> bool:
    """The user's message asks for a change of this kind: a request word outside what the
    message quotes (a quoted "remember that …" is someone else's), not negated in its clause
    nor asked about (_NEGATION, _RECALL_QUESTION)."""
    own = _normal(outside_quotations(text))
    for match in _REQUESTS[kind].finditer(own):
        if match[0] in _UNNEGATED:
            return True
        clause = _CLAUSE_END.split(own[:match.start()])[-1]
        if not _NEGATION.search(clause) and not _RECALL_QUESTION.search(clause):
            return True
    return False


def _offers(reply: str, kind: str) -> bool:
    """The agent's reply offers a change of this kind: a question of its own that asks whether
    it should (_OFFERS). Nothing from the reply's first quotation mark to its last is its own:
    there it quotes, such as another member's fact, and a mark inside the quoted text cannot end
    the quotation early."""
    own = _normal(outside_quotations(reply))
    return any(_OFFERS[kind].search(question) for question in _QUESTION.findall(own))


def _confirms(words: TurnWords, kind: str) -> bool:
    """A short yes and nothing else ("Yes please.", "Sure, go ahead"; not "OK, what else do you
    know?") to an offer of the agent's of this kind: a yes to "remember …?" deletes nothing."""
    answer = _normal(words.user_message).strip(" .!")
    yes = _AFFIRMATIVE.match(answer)
    rest = _WORD.findall(answer[yes.end():]) if yes else []
    return (
        yes is not None and not _NEGATIVE.search(answer)
        and "?" not in answer and len(answer.split()) <= _AFFIRMATIVE_MAX_WORDS
        and all(word in _YES_WORDS for word in rest)
        and _offers(words.previous_reply, kind)
    )


def _grounded(written: str, sources: list[str], *, before: str = "") -> bool:
    added = _stems(written) - _stems(before)
    if not added:
        return True
    known = set().union(*(_stems(text) for text in sources))
    return len(added & known) >= GROUNDED_SHARE * len(added)


def _names_memory(memory, sources: list[str]) -> bool:
    said = " ".join(_normal(text) for text in sources)
    if re.search(rf"\b{re.escape(memory.pk.lower())}\b", said):
        return True
    known = _stems(said)
    if memory.subject and _stems(memory.subject) and _stems(memory.subject) <= known:
        return True
    words = _stems(memory.content or "")
    return bool(words) and len(words & known) >= DELETE_NAMED_SHARE * len(words)


def _written_text(name: str, arguments: dict[str, Any]) -> str:
    if arguments.get("operation") == "add_poi":
        return f"{arguments.get('place_name') or ''} {arguments.get('notes') or ''}"
    return str(arguments.get("content") or "")


def _refused(kind: str, why: str) -> WriteDecision:
    return WriteDecision(
        allowed=False, kind=kind, basis="",
        reason=(
            f"Held back, nothing was written: {why} A memory is changed only when the user's "
            "own message of this turn asks for it or says yes to your offer. Tell the user what "
            "you would change and ask; if they agree, call the tool again."
        ),
    )


def write_decision(
    *, user: AbstractBaseUser, name: str, arguments: dict[str, Any], words: TurnWords
) -> WriteDecision:
    """Whether the model may make this call in a turn where the user said `words`."""
    kind = write_kind(name, arguments)
    if kind is None:
        return WriteDecision(allowed=True, kind=None, basis="read")
    said = words.user_message
    if _asks(kind, said):
        basis, sources = "request", [said]
    elif _confirms(words, kind):
        basis, sources = "confirmation", [said, words.previous_reply]
    elif kind == UPDATE:
        basis, sources = "statement", [said]
    else:
        verb = "forget" if kind == DELETE else "remember"
        return _refused(kind, f"the user did not ask you to {verb} anything, nor confirm an "
                              "offer to.")
    memory = None
    memory_id = arguments.get("memory_id") or arguments.get("fact_id")
    if kind in (UPDATE, DELETE) and isinstance(memory_id, str):
        try:
            memory = selectors.active_memory_for_user(user=user, memory_id=memory_id.strip())
        except NotFound:
            # The tool answers not_found and writes nothing.
            return WriteDecision(allowed=True, kind=kind, basis=basis)
    if kind == DELETE:
        if memory is not None and not _names_memory(memory, sources):
            return _refused(kind, "the user's words do not name this memory.")
        return WriteDecision(allowed=True, kind=kind, basis=basis)
    before = f"{memory.subject or ''} {memory.content}" if memory is not None else ""
    if basis == "statement" and not _states_change(memory, said, _written_text(name, arguments)):
        return _refused(kind, "the user did not ask for a change to this memory.")
    if not _grounded(_written_text(name, arguments), sources, before=before):
        return _refused(kind, "the text to store is not what the user said.")
    return WriteDecision(allowed=True, kind=kind, basis=basis)


def _states_change(memory, said: str, written: str) -> bool:
    """A statement updates a memory when it mentions the memory (its subject or a word of its
    text) and the new text brings words the memory did not have."""
    if memory is None:
        return False
    about = _stems(f"{memory.subject or ''} {memory.content}")
    return bool(about & _stems(said)) and bool(_stems(written) - about)
