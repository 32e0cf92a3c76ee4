"""Seed 004's rule-based session state manager: topics, open loops, clarifications and intent per message."""

import re
from dataclasses import dataclass, field, replace

from django.conf import settings

from memory_site.core.language.sentences import is_question, split_sentences

ACTIVE = "active"
PAUSED = "paused"
RESUMING = "resuming"
AWAITING_CLARIFICATION = "awaiting_clarification"
SHUTDOWN_CLEAN = "shutdown_clean"

# Themes a memorial conversation keeps returning to, by the words that signal them.
TOPIC_WORDS = {
    "childhood": ("childhood", "grew up", "as a girl", "as a boy", "school days", "kid"),
    "family": ("family", "children", "grandchildren", "sister", "brother", "cousin", "kids",
               "aunt", "uncle", "niece", "nephew"),
    "marriage": ("married", "wedding", "husband", "wife", "anniversary"),
    "work": ("worked", "job", "career", "retired", "office", "factory", "business", "nurse",
             "teacher", "farm"),
    "military": ("army", "navy", "air force", "war", "served", "marines"),
    "faith": ("church", "faith", "prayer", "synagogue", "mosque", "bible"),
    "cooking": ("cook", "cooking", "recipe", "baked", "baking", "kitchen", "pie", "bread"),
    "music": ("music", "sang", "sing", "piano", "guitar", "choir", "song", "danced"),
    "garden": ("garden", "gardening", "roses", "flowers", "vegetables"),
    "travel": ("travel", "trip", "vacation", "holiday", "visited", "journey"),
    "sports": ("fishing", "golf", "baseball", "football", "hiking", "tennis", "swimming"),
    "illness": ("hospital", "illness", "cancer", "sick", "diagnosis", "hospice"),
    "loss": ("funeral", "passed away", "died", "grave", "memorial", "grief", "miss her",
             "miss him"),
    "home": ("house", "home", "farmhouse", "apartment", "moved to"),
}

_OPEN_LOOP = re.compile(
    r"\b(remind me|don't let me forget|do not let me forget|i need to|i have to|i should|"
    r"i'll (?:ask|check|find|look|call)|i will (?:ask|check|find|look|call)|"
    r"let's come back to|we should talk about|later|i'm not sure|i am not sure|"
    r"i can't remember|i cannot remember|i don't remember)\b",
    re.IGNORECASE,
)
_LOOP_RESOLVED = re.compile(
    r"\b(i|we) (found|asked|checked|called|remembered|looked|did|finished)\b", re.IGNORECASE
)
_GREETING = re.compile(r"^(hi|hello|hey|good (morning|afternoon|evening))\b", re.IGNORECASE)
_FAREWELL = re.compile(r"\b(bye|goodbye|good night|talk (to you )?later|see you)\b", re.IGNORECASE)
_THANKS = re.compile(r"\b(thank you|thanks|thank u)\b", re.IGNORECASE)
_CORRECTION = re.compile(
    r"^(actually|sorry,? i mean|i meant|correction|no,? wait|wait,? no)\b|\bnot \d{4}\b",
    re.IGNORECASE,
)
_EMOTION = re.compile(
    r"\b(miss|missing|sad|grief|grieving|cry|crying|lonely|hard day|heartbroken|angry)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z']+")
_STOPWORDS = frozenset(
    ["a", "an", "and", "the", "to", "of", "in", "on", "at", "for", "with", "my", "me", "i", "we", "our", "it", "is", "was", "be", "that", "this", "about", "remind", "need", "have", "should", "later", "not", "sure", "can't", "don't", "remember"]
)


@dataclass(frozen=True)
class SessionState:
    """The part of seed 004's SessionState kept on the conversation row."""

    status: str = ACTIVE
    active_topics: list[str] = field(default_factory=list)
    open_loops: list[str] = field(default_factory=list)
    pending_clarifications: list[str] = field(default_factory=list)
    last_intent: str = ""
    turn_count: int = 0


def classify_intent(content: str) -> str:
    """The user's intent, from the first rule that matches."""
    text = content.strip()
    sentences = split_sentences(text) or [text]
    if _CORRECTION.search(text):
        return "correction"
    if re.search(r"\b(remind me|don't let me forget|do not let me forget)\b", text, re.I):
        return "request_reminder"
    if _FAREWELL.search(text) and len(text) < 80:
        return "farewell"
    if _THANKS.search(text) and len(text) < 60:
        return "thanks"
    if all(is_question(s) for s in sentences):
        return "question"
    if _EMOTION.search(text):
        return "express_emotion"
    if _GREETING.match(text) and len(text) < 40:
        return "greeting"
    return "share_memory"


# One pattern a topic: any of its words as a whole word (a message is matched once per topic,
# not once per word).
_TOPIC_PATTERNS = {
    topic: re.compile(rf"\b(?:{'|'.join(re.escape(word) for word in words)})\b")
    for topic, words in TOPIC_WORDS.items()
}


def topics_in(content: str) -> list[str]:
    lowered = content.lower()
    return [topic for topic, pattern in _TOPIC_PATTERNS.items() if pattern.search(lowered)]


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and len(w) > 2}


def _merge_topics(current: list[str], new: list[str], limit: int) -> list[str]:
    """Most recent first, no repeats, at most `limit`."""
    merged = list(dict.fromkeys([*new, *current]))
    return merged[:limit]


def _update_open_loops(loops: list[str], content: str, limit: int) -> list[str]:
    loops = list(loops)
    for sentence in split_sentences(content):
        if _LOOP_RESOLVED.search(sentence):
            words = _content_words(sentence)
            loops = [loop for loop in loops if len(words & _content_words(loop)) < 2]
        elif (_OPEN_LOOP.search(sentence) and not is_question(sentence)
              and sentence not in loops):
            loops.append(sentence)
    return loops[-limit:]


def next_state(state: SessionState, *, role: str, content: str) -> SessionState:
    """The session state after one more message of `role` with `content`."""
    if role == "user":
        pending = state.pending_clarifications
        sentences = split_sentences(content)
        # A reply that is only a question of its own leaves the assistant's questions open.
        if sentences and not all(is_question(s) for s in sentences):
            pending = []
        status = state.status
        if status in (SHUTDOWN_CLEAN, PAUSED):
            status = RESUMING
        elif status == AWAITING_CLARIFICATION and not pending:
            status = ACTIVE
        return replace(
            state,
            status=status,
            turn_count=state.turn_count + 1,
            active_topics=_merge_topics(
                state.active_topics, topics_in(content), settings.SESSION_ACTIVE_TOPICS_MAX
            ),
            open_loops=_update_open_loops(
                state.open_loops, content, settings.SESSION_OPEN_LOOPS_MAX
            ),
            pending_clarifications=pending,
            last_intent=classify_intent(content),
        )
    if role == "assistant":
        questions = [s for s in split_sentences(content) if s.endswith("?")]
        if state.status in (SHUTDOWN_CLEAN, PAUSED):
            status = RESUMING
        elif questions:
            status = AWAITING_CLARIFICATION
        else:
            status = ACTIVE
        return replace(state, status=status, pending_clarifications=questions)
    # System and tool messages carry no conversational state, but still reopen a closed session.
    if state.status in (SHUTDOWN_CLEAN, PAUSED):
        return replace(state, status=RESUMING)
    return state
