"""The write rule: a memory change the model makes in an agent turn needs the user's word in
that turn, so that text other people wrote (a shared fact, the legacy's name) cannot change or
delete a user's memories through their own agent.

A write tool call (add_to_memory, update_memory, manage_user_memory with add_fact,
deactivate_fact or add_poi) is carried out when the user's message of the turn

1. **asks for it**: it contains a request of the call's kind (_REQUESTS) — to add:
   "remember", "don't (ever) forget", "never forget", "keep/bear (this) in mind", "make a
   note", "note that", "note:", "write/jot (this) down", "memorize", "record that", "add to
   memory", "save", "store", "from now on"; to update: those or "update", "change", "correct",
   "replace", "edit", "actually", "no longer", "anymore"; to delete: "forget", "delete",
   "remove", "deactivate", "erase", "wipe", "get rid of" — outside what the message quotes,
   not negated (up to five words before it in its clause, "don't save anything about …", "I
   do not want you to ever store …", "never remove …", "I can't remember"; by a clause of its
   sentence that is only a negation, "Do not, under any circumstances, save …"; or as the next
   of a list, "do not save, store or keep …"), not said of someone ("I always forget her
   birthday", "Grandma used to save every penny", "I remember when …", "I'll never forget the
   day he died"; "can you remember …", "make sure you remember …" and "I want you to remember
   …" ask), not asked about ("do you remember …?", "what would you remember?") and not
   "forget it" waving a topic away after a dismissal or opening its sentence ("no, forget it",
   "never mind, forget it", "forget it, Alec is my boss"), nor a request word with nothing to
   change ("remove nothing, …", "remove all doubt"); or
2. **confirms it**: it is a short yes and nothing else ("yes", "yes please", "sure", "ok",
   "go ahead", "please do", "oh yes", "mm-hmm", "yes, thank you so much", "yeah, that'd be
   lovely", …; at most 8 words, no question) and the agent's previous message
   offered a change of the call's kind in a question of its own ("Would you like me to
   remember …?", "Shall I forget …?": an asking phrase with the agent as the one who acts —
   "would you like me to", "do you want me to", "shall I", "should I", "can I", "let me" —
   followed at once by a word of the change's kind: "remember" offers an addition or an
   update, "forget" a deletion; a question offering both is no offer; "Do you remember …?",
   "Should I keep going?", "Would you like to forget about this?" and "Would you like me to
   not remember …?" offer nothing), outside the span from the message's first
   quotation mark to its last, of any style: `memory_site.core.text.outside_quotations`, so that
   text the agent quotes cannot end its quotation early with a mark of its own); or
3. for update_memory only, **states it**: the user's message states how things are now or
   what changed ("is", "lives", "works", "moved", "left", "now", "these days" …), names the
   memory (its subject or a word of its text) and brings new words for it (seed 003: an
   update needs no confirmation; "I wonder what Mae would have said" states nothing);

and the text written — content, and a subject of more than four words — comes from the user
(**grounding**): at least two thirds of the words it adds (words of three or more letters, or
with a digit, outside a short list of function words, compared on their first five letters)
appear in the user's message — or, when confirming, in that message or the offer it confirms —
and it says "not", "never", "no" … only where the memory already did or the user said such a
word. A deletion must name the memory: its id, its subject, or half of the words of its text,
in those same messages.

Reading (get_memory) is never held back. Everything else is refused with the reason, which
the model reads as the tool result (code `not_confirmed`) and the turn records with the call.
"""

import bisect
import re
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from agent_memory import selectors
from memory_site.core.errors import NotFound
from memory_site.core.language.words import AFFIRMATIVE
from memory_site.core.text import comparison_key, outside_quotations

ADD, UPDATE, DELETE = "add", "update", "delete"

# Which calls write, and what kind of change each is.
_TOOL_KINDS = {"add_to_memory": ADD, "update_memory": UPDATE}
_OPERATION_KINDS = {"add_fact": ADD, "add_poi": ADD, "deactivate_fact": DELETE}

# Grounding: the share of added words that must come from the user's side of the turn.
GROUNDED_SHARE = 2 / 3
DELETE_NAMED_SHARE = 1 / 2
_STEM = 5

# "Don't forget" and its emphatic forms ask to add ("never forget: …", "don't ever forget").
_KEEP_IN_MIND = r"(?:don't|dont|do not|never)(?: ever)? forget"
_ADD_WORDS = (
    rf"remember|{_KEEP_IN_MIND}|(?:keep|bear) (?:this |that |it )?in mind|make a note|memori[sz]e"
    r"|note(?:\s+(?:that|this|down)|(?=\s*:))|(?:write|jot)(?: that| this| it)? down|save|store"
    r"|record (?:that|this)|keep track of|add(?: this| that| it)?(?: to (?:my |your )?memory|:)"
    r"|from now on"
)
_UPDATE_WORDS = r"update|change|correct|replace|edit"
_DELETE_WORDS = r"forget|delete|remove|deactivate|erase|wipe|get rid of|stop remembering"
_REQUESTS = {
    ADD: re.compile(rf"\b(?:{_ADD_WORDS})\b"),
    UPDATE: re.compile(rf"\b(?:{_ADD_WORDS}|{_UPDATE_WORDS}|actually|no longer|any ?more)\b"),
    DELETE: re.compile(rf"\b(?:{_DELETE_WORDS})\b"),
}
# Not a request: a request word negated earlier in its clause, at most five words before it
# ("don't save anything about …", "I do not want you to ever store this", "never remove …",
# "I can't remember") or in a clause of its sentence that is nothing but a negation ("Do not,
# under any circumstances, save …"); said of someone ("I always forget her birthday", "Grandma
# used to save every penny", "I remember when …"); asked about ("do you remember …?", "what
# would you remember?"); or "forget it" waving a topic away.
_NEGATIONS = (
    r"can't|cant|cannot|can not|couldn't|couldnt|don't|dont|do not|didn't|didnt|did not"
    r"|won't|wont|will not|wouldn't|wouldnt|shouldn't|shouldnt|mustn't|never|not|no need to"
    r"|stop|nobody|no one|under no circumstances|no way|refuse to|hate for you to|hate to"
)
_NEGATION = re.compile(rf"\b(?:{_NEGATIONS})(?:\s+\S+){{0,5}}\s*$")
_BARE_NEGATION = re.compile(rf"\s*(?:(?:no|please|ever|just)\s+)*(?:{_NEGATIONS})"
                            r"(?:\s+(?:no|please|ever|just))*\s*")
# Request words that a negation before them leaves requests: "not … anymore" states a change.
_UNNEGATED = frozenset(("actually", "no longer", "anymore", "any more"))
_SAID_OF_SOMEONE = re.compile(
    r"\b(?:i|we|he|she|they|everyone|everybody|people)(?:'d|'ll)?"
    r"(?:\s+(?:always|still|really|just|often|sometimes|also|even|usually|barely|hardly|can"
    r"|could|will|would|might|do|did|does|never|ever))*\s*$|\bused to\s*$"
)
# "Can you …", "could you please …", "I want you to …": a request made of the same words.
_ASKED_OF_YOU = re.compile(r"\b(?:can|could|will|would|please) you(?: please)?\s*$"
                           r"|\b(?:want|need|like|ask) you to(?: please)?\s*$")
_RECALL_QUESTION = re.compile(
    r"\b(?:do|did|does) (?:you|he|she|they|we|i) (?:still |even )?$"
    r"|^\s*(?:what|how|why|when|where|who|which|is there|are there|was there)\b"
    r"|\b(?:what|how|why|when|where|who|which)(?:\s+\S+){0,3}\s*$"
)
# "Remember when we went to the lake?": a memory shared, not a request (a question to the end
# of its sentence).
_REMINISCING = re.compile(r"\s+(?:when|how|the (?:time|day|night|summer|year)|that (?:time|day))"
                          r"\b[^.!?]*\?")
# "No, forget it", "never mind, forget it": a topic waved away, not a deletion.
_WAVED_AWAY = re.compile(r"forget (?:about )?(?:it|that|this|i (?:said|asked|mentioned))\b"
                         r"\s*(?:[.!,;:\u2013\u2014-]|$)")
# …and one that opens its sentence is waved away only when the sentence goes on about something
# else ("Forget it, Alec is my boss"); "Forget it." or "Please forget that." asks.
_WAVED_AWAY_OPENING = re.compile(r"forget (?:about )?(?:it|that|this)\s*[,;:\u2013\u2014-]\s*"
                                 r"(?!please\b)\w")
_DISMISSAL = re.compile(r"(?:^|\W)(?:no|nah|nope|never ?mind|oh well|ok|okay|whatever|meh)"
                        r"[\s,.!-]*$")
# "Forget it, …" opening its sentence waves a topic away as a dismissal before it does.
_SENTENCE_OPENING = re.compile(r"\s*(?:(?:oh|just|please|so|and|well|hmm+|ah|eh|actually|anyway)"
                               r"[\s,]+)*$")
# "Remove nothing, …", "delete none of it", "remove all doubt: …": the word has no object to
# change, or not a memory.
_NO_OBJECT = re.compile(r"\s+(?:nothing|none|no ?one|nobody|no (?!longer\b)\w+"
                        r"|(?:all|any|every)\s+doubts?)\b"
                        r"(?!(?:\s+of\s+\w+)?\s+(?:but|except|other than|apart from|save)\b)")
# Not a request: one asked only as a hypothesis ("If I asked you to delete …, would you?"), or
# someone else's words ("The nurse said delete …", "Alec asked me to delete …", "Mom would say:
# forget …").
_HYPOTHETICAL = re.compile(r"\b(?:if|suppose|supposing|imagine|what if)\b(?:\s+\S+){0,8}\s*$")
_REPORTED = re.compile(r"\b(?:said|says|say|told me|tells me|asked me|asks me|kept saying)"
                       r"(?:\s+to)?\s*$")
# A request turned down by the next sentence: "Delete the memory about Alec? Absolutely not!",
# "Can you forget Alec? Just asking, don't do it."
_REFUSED_AFTER = re.compile(r"\s*(?:absolutely not|not a chance|no way|never\b|nope|no[,.!]"
                            r"|no,? wait|no thanks|don't do it|do not do it|just asking|kidding)")
# How far before a request word its negation or subject is looked for: the checks read a
# bounded window, so that a long message costs time in proportion to its length.
_LOOK_BACK = 300
_CLAUSE_END = re.compile(r"[,;:()\[\]\u2013\u2014]|\s-\s|\bbut\b")
_SENTENCE_END = re.compile(r"[.!?]+(?:\s|$)")
_AFFIRMATIVE = re.compile(rf"^{AFFIRMATIVE}")
_NEGATIVE = re.compile(r"\b(?:no|not|don't|do not|never|nope)\b")
_AFFIRMATIVE_MAX_WORDS = 8
# What may follow the yes: more yes, politeness, "remember it". "Sure, tell me more" is no yes.
_YES_WORDS = frozenset((
    "yes", "yeah", "yep", "sure", "ok", "okay", "please", "do", "go", "ahead", "it", "that",
    "thanks", "thank", "you", "of", "course", "absolutely", "definitely", "certainly", "great",
    "lovely", "good", "idea", "remember", "save", "store", "keep", "note", "add", "right",
    "correct", "that's", "i'd", "like", "would", "love", "to", "i", "yes,", "so", "much",
    "that'd", "be", "wonderful", "perfect", "indeed", "her", "him", "them", "is", "was",
    "exactly", "oh", "mm", "mhm", "nice",
))
# A question of the reply's own: the text since the last sentence end up to a "?" (the full
# stop of an abbreviation or a decimal number ends no sentence: "Mrs. Jones", "5.5 feet").
_SENTENCE_MARK = re.compile(r"[.!?؟]")
_ABBREVIATION = re.compile(r"\b(?:mr|mrs|ms|dr|st|jr|sr|mt|vs|etc|no)$")
# An offer: the agent asks whether it should make a change, the change's word right after
# the asking ("Would you like me to remember …?", "Shall I forget …?", "Do you want me to
# also save …?"). "Do you remember …?", "Would you like to keep talking?", "Should I keep
# going?" and "Would you like me to not remember …?" offer nothing.
_OFFER_ASK = (
    r"\b(?:(?:would|do) you (?:like|want) me to|want me to|like me to|shall i|should i|can i"
    r"|could i|may i|let me)(?:\s+(?:also|just|go ahead and|please))?\s+"
)
_OFFER_ADD = r"remember|store|save|note|make a note|keep (?:that|this|it) in mind|add|write"
_OFFER_WORDS = {ADD: _OFFER_ADD, UPDATE: rf"{_OFFER_ADD}|{_UPDATE_WORDS}", DELETE: _DELETE_WORDS}
_OFFERS = {
    kind: re.compile(rf"{_OFFER_ASK}(?:{words})\b") for kind, words in _OFFER_WORDS.items()
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


_APOSTROPHE_LIKE = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'", "\u00b4": "'",
                                  "\u02bc": "'", "\u2032": "'"})


def _normal(text: str) -> str:
    """`text` in the form words are compared in: comparison_key's (case, full-width letters and
    invisible characters make no other word), every apostrophe-like mark straight."""
    return comparison_key(text.translate(_APOSTROPHE_LIKE))


def _stems(text: str) -> set[str]:
    stems = set()
    for word in _WORD.findall(_normal(text)):
        word = word.removesuffix("'s")
        # Numbers count at any length: "93 41" is not grounded in "Tom lives in Denver".
        if (len(word) >= 3 or any(char.isdigit() for char in word)) and (
            word not in FUNCTION_WORDS
        ):
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
    sentence_starts = [0, *(end.end() for end in _SENTENCE_END.finditer(own))]
    negated_until = -1  # where the last negated request word ended
    for match in _REQUESTS[kind].finditer(own):
        if match[0] in _UNNEGATED:
            return True
        start = sentence_starts[bisect.bisect_right(sentence_starts, match.start()) - 1]
        clauses = _CLAUSE_END.split(own[max(start, match.start() - _LOOK_BACK):match.start()])
        clause = clauses[-1]
        if re.fullmatch(_KEEP_IN_MIND, match[0]):
            if _SAID_OF_SOMEONE.search(clause):  # "I'll never forget the day he died"
                continue
            return True
        if match[0] == "remember" and _REMINISCING.match(own, match.end()):
            continue  # "Remember when we went to the lake?"
        if kind == DELETE and _WAVED_AWAY.match(own, match.start()) and (
            _DISMISSAL.search(own[max(start, match.start() - 40):match.start()])
            or (_SENTENCE_OPENING.fullmatch(own[start:match.start()])
                and _WAVED_AWAY_OPENING.match(own, match.start()))
        ):
            continue
        if _NO_OBJECT.match(own, match.end()):
            continue
        if _HYPOTHETICAL.search(clause) or _REPORTED.search(clause) or (
                not clause.strip() and len(clauses) > 1 and _REPORTED.search(clauses[-2])):
            continue
        following = _SENTENCE_END.search(own, match.end())
        if following and _REFUSED_AFTER.match(own, following.end()):
            continue
        between = own[negated_until:match.start()] if negated_until >= 0 else ""
        if (
            # "Do not save, store or keep …": a list goes on with the negation.
            (between and len(between) < 40
             and re.fullmatch(r"(?:\s*,\s*|\s+(?:or|and|nor)\s+)+", between))
            or _NEGATION.search(clause) or _RECALL_QUESTION.search(clause)
            or any(_BARE_NEGATION.fullmatch(earlier) for earlier in clauses[:-1])
            or (_SAID_OF_SOMEONE.search(clause) and not _ASKED_OF_YOU.search(clause))
        ):
            negated_until = match.end()
            continue
        return True
    return False


def _questions(text: str) -> list[str]:
    """The sentences of `text` that end with a question mark, in one pass (_QUESTION's rule)."""
    found, start = [], 0
    for mark in _SENTENCE_MARK.finditer(text):
        at = mark.start()
        if mark[0] == "." and (text[at + 1:at + 2].isdigit()
                               or _ABBREVIATION.search(text, max(start, at - 4), at)):
            continue
        if mark[0] in "?؟":
            found.append(text[start:at + 1])
        start = at + 1
    return found


def _offers(reply: str, kind: str) -> bool:
    """The agent's reply offers a change of this kind: a question of its own that asks whether
    it should (_OFFERS). Nothing from the reply's first quotation mark to its last is its own:
    there it quotes, such as another member's fact, and a mark inside the quoted text cannot end
    the quotation early."""
    own = _normal(outside_quotations(reply))
    questions = _questions(own)
    if kind != DELETE and any(_OFFERS[DELETE].search(question) for question in questions):
        return False  # "Shall I remember it, or forget it?": a yes says neither
    if kind == DELETE and any(_OFFERS[ADD].search(question) for question in questions):
        return False
    return any(_OFFERS[kind].search(question) for question in questions)


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


# A subject is a label the model chooses ("Mother's favourite flower"): one of a few words is
# free, a longer one is grounded like the content (it could carry instructions of its own).
SUBJECT_FREE_WORDS = 4


def _written_text(name: str, arguments: dict[str, Any]) -> str:
    """Every text the call would store that must be grounded: the content, and the subject
    when it is longer than SUBJECT_FREE_WORDS words."""
    if arguments.get("operation") == "add_poi":
        return f"{arguments.get('place_name') or ''} {arguments.get('notes') or ''}"
    subject = str(arguments.get("subject") or "")
    if len(_WORD.findall(subject)) <= SUBJECT_FREE_WORDS:
        subject = ""
    return f"{subject} {arguments.get('content') or ''}".strip()


_NEGATING = re.compile(r"\b(?:not|never|no|none|nothing|nobody|neither|nor)\b|n't\b")


def _negates_unsaid(written: str, sources: list[str], *, before: str = "") -> bool:
    """The text to store says "not" (or "never", "wasn't" …) where the memory did not and the
    user said no such word: "Mae was not allergic to penicillin" for "Mae was allergic to
    penicillin" is grounded word for word, but says the opposite."""
    def count(text: str) -> int:
        return len(_NEGATING.findall(_normal(text)))

    return count(written) > count(before) and not any(count(text) for text in sources)


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
        # The whole reply: what a yes agrees to may be what the offer quotes ("Would you like
        # me to remember that her song was “Moon River”?"); the user read it all.
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
    written = _written_text(name, arguments)
    if not _grounded(written, sources, before=before) or _negates_unsaid(
        written, sources, before=before
    ):
        return _refused(kind, "the text to store is not what the user said.")
    return WriteDecision(allowed=True, kind=kind, basis=basis)


# What makes a statement a statement of how things are now: a present state ("is", "lives",
# "works"), a change ("moved", "left", "retired"), or a time marker ("now", "these days").
# "I wonder what Mae would have said" states nothing that an update could write.
_STATE_OR_CHANGE = re.compile(
    r"\b(?:is|are|lives|works|leads|runs|owns|goes|moved|changed|switched|became"
    r"|started|stopped|left|joined|retired|quit|got|married|divorced|passed|died|now"
    r"|these days|nowadays|since|instead|anymore|no longer|new)\b|'s\b"
)


def _states_change(memory, said: str, written: str) -> bool:
    """A statement updates a memory when it states how things are now or what changed
    (_STATE_OR_CHANGE), mentions the memory (its subject or a word of its text) and the new
    text brings words the memory did not have."""
    if memory is None or not _STATE_OR_CHANGE.search(_normal(said)):
        return False
    about = _stems(f"{memory.subject or ''} {memory.content}")
    return bool(about & _stems(said)) and bool(_stems(written) - about)
