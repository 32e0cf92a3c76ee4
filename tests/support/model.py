"""A model that follows the prompt, for the scenario suite: it answers the project's chat,
extraction and rolling-summary calls from what the request CONTAINS, the way a compliant model
would, and from nothing else. What it cannot see, it cannot use: when the agent's question is
missing from the messages it receives, a "Yes please." cannot become a memory.

    server.responder = PromptFollowingModel()   # FakeOpenAIServer answers every chat call

Chat (a request with tools):
- after tool results: says what was stored, or that it was refused and why;
- "yes" (and the like) right after its own "Would you like me to remember that X?": calls
  add_to_memory with X, the user's words turned back to the user's point of view;
- "no" (and the like) after such an offer: "No problem, I won't store that.";
- a statement that changes a memory in its memory block (the memory's subject named with
  "moved", "now", "changed", "no longer", "actually"): calls update_memory with that id;
- "X is my Y", "I'm working with X", "her favourite … was …": offers to remember it;
- "remember that X": calls add_to_memory with X at once (an explicit request);
- a question ("what/who/when/where … ?"): answers with the memory and fact lines of its system
  prompt that share a word with the question (so the test sees which facts it was given).
Extraction (a JSON call that asks for "facts"): the offline rules over the transcript and the
known facts it was sent (so a supersede reference comes back the way the contract says).
Rolling summary: the offline rolling summary of the transcript it was sent.
"""

import json
import re
from typing import Any

from memory_site.core.ai.base import KnownFact, TranscriptLine
from memory_site.core.ai.offline.provider import ExtractiveLLM
from memory_site.core.ai.offline.summarizer import rolling_summary

OFFER = re.compile(r"Would you like me to remember that (?P<what>.+?)(?: for future conversations)?\?")
YES = re.compile(r"^\s*(yes|yes please|yeah|yep|sure|ok(ay)?|please do|go ahead)\b", re.I)
NO = re.compile(r"^\s*(no|nope|no thanks|don't|do not)\b", re.I)
REMEMBER = re.compile(r"^\s*(?:please\s+)?remember\s+(?:that\s+)?(?P<what>.+?)[.!]?\s*$", re.I)
CHANGE = re.compile(r"\b(moved|now|changed|no longer|actually|switched|left)\b", re.I)
MEMORY_LINE = re.compile(r"^- \[id:(?P<id>[^\]]+)\] (?:\[(?P<subject>[^\]]+)\] )?(?P<content>.+)$")
TRANSCRIPT_LINE = re.compile(r"^\[(?P<sequence>\d+)\] (?P<role>user|assistant|tool|system): (?P<content>.*)$")
KNOWN_LINE = re.compile(r"^\[?(?P<ref>f\d+)\]?[:.]?\s+(?P<content>.+)$")
STATEMENT = re.compile(
    r"^(?P<who>[A-Z][a-z]+) is my (?P<what>[\w ]+?)(?: by the way)?[.!]?$"
    r"|^I'?m working with (?P<with>[A-Z][a-z]+)(?P<rest>.*?)[.!]?$"
    r"|^(?P<fav>(?:her|his) favou?rite [\w ]+ (?:was|is) [\w ]+?)[.!]?$",
    re.I,
)
QUESTION = re.compile(r"\?\s*$|^\s*(what|who|when|where|how|did|do|does|was|is)\b", re.I)
STOP = {"the", "a", "an", "is", "was", "did", "do", "does", "what", "who", "when", "where", "how",
        "about", "you", "know", "me", "tell", "her", "his", "she", "he", "of", "to", "in", "my"}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if w not in STOP}


def _your(text: str) -> str:
    """The user's words as the agent says them back."""
    text = re.sub(r"\bI'?m\b", "you're", text)
    text = re.sub(r"\bmy\b", "your", text, flags=re.I)
    return re.sub(r"\bI\b", "you", text)


def _users(text: str) -> str:
    """The agent's words about the user as a memory: "your boss" → "the user's boss"."""
    text = re.sub(r"\byou're\b", "the user is", text, flags=re.I)
    return re.sub(r"\byour\b", "the user's", text, flags=re.I)


def fenced(text: str, tag: str) -> list[str]:
    """The lines between <tag> and </tag> (each on a line of its own), unescaped."""
    found, inside = [], False
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped == f"<{tag}>":
            inside = True
        elif stripped == f"</{tag}>":
            inside = False
        elif inside and stripped:
            found.append(stripped.replace("&lt;", "<"))
    return found


def _tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": f"call_{name}", "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }]}


def _text(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


class PromptFollowingModel:
    def __init__(self) -> None:
        self.offline = ExtractiveLLM()

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        """The assistant message of a chat completion for `body`."""
        messages = body.get("messages", [])
        system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
        if body.get("tools"):
            return self.chat(messages, system)
        user = "\n".join(m.get("content") or "" for m in messages if m.get("role") == "user")
        if '"facts"' in system:
            return _text(json.dumps(self.extract(system, user)))
        return _text(json.dumps({"summary": self.summarize(user)}))

    # --- chat ------------------------------------------------------------------------------

    def chat(self, messages: list[dict[str, Any]], system: str) -> dict[str, Any]:
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        said = (messages[last_user].get("content") or "").strip()
        results = [json.loads(m["content"]) for m in messages[last_user + 1:]
                   if m.get("role") == "tool"]
        if results:
            return _text(" ".join(self._after_tool(result) for result in results))
        before = next((m.get("content") or "" for m in reversed(messages[:last_user])
                       if m.get("role") == "assistant"), "")
        offer = OFFER.search(before)
        if offer and YES.match(said):
            what = _users(offer.group("what"))
            subject = next(iter(re.findall(r"\b[A-Z][a-z]+\b", what)), None)
            arguments = {"content": what[0].upper() + what[1:],
                         "category": "person" if subject else "context"}
            if subject:
                arguments["subject"] = subject
            return _tool_call("add_to_memory", arguments)
        if offer and NO.match(said):
            return _text("No problem, I won't store that.")
        if request := REMEMBER.match(said):
            return _tool_call("add_to_memory", {"content": request.group("what"),
                                                "category": "context"})
        memories = [m for line in fenced(system, "memory-data")
                    if (m := MEMORY_LINE.match(line))]
        if CHANGE.search(said):
            for memory in memories:
                if memory.group("subject") and memory.group("subject") in said:
                    return _tool_call("update_memory", {"memory_id": memory.group("id"),
                                                        "content": said.rstrip(".")})
        if STATEMENT.match(said):
            return _text(f"Would you like me to remember that {_your(said.rstrip('.!'))}"
                         .replace(" by the way", "") + "?")
        if QUESTION.search(said):
            asked = _words(said)
            lines = [m.group("content") for m in memories]
            lines += [line.removeprefix("- ") for line in fenced(system, "legacy_facts")
                      if line.startswith("- ")]
            known = [line for line in lines if asked & _words(line)]
            return _text("From what I have: " + " | ".join(known) if known
                         else "I don't have anything about that yet.")
        return _text("Thank you for telling me.")

    @staticmethod
    def _after_tool(result: dict[str, Any]) -> str:
        if result.get("ok"):
            return "Done, I'll remember that."
        return f"I didn't store that: {result.get('detail', 'it was refused')}"

    # --- background calls --------------------------------------------------------------------

    @staticmethod
    def _transcript(text: str) -> list[TranscriptLine]:
        return [
            TranscriptLine(sequence=int(m.group("sequence")), role=m.group("role"),
                           content=m.group("content"))
            for line in fenced(text, "transcript")
            if (m := TRANSCRIPT_LINE.match(line))
        ]

    def extract(self, system: str, user: str) -> dict[str, Any]:
        name = next(iter(fenced(system, "legacy_name") or fenced(user, "legacy_name")), "")
        known = [KnownFact(ref=m.group("ref"), content=m.group("content"))
                 for line in fenced(user, "known_facts") + fenced(system, "known_facts")
                 if (m := KNOWN_LINE.match(line))]
        result = self.offline.summarize_and_extract(
            messages=self._transcript(user), legacy_name=name or "the person",
            known_facts=known,
        )
        facts = []
        for fact in result.facts:
            item = {"category": fact.category, "content": fact.content}
            if fact.supersedes:
                item["supersedes"] = fact.supersedes
            facts.append(item)
        return {"summary": result.summary, "facts": facts}

    def summarize(self, user: str) -> str:
        lines = self._transcript(user)
        start = min((line.sequence for line in lines), default=0)
        return rolling_summary(previous_summary=None, messages=lines, window_start=start,
                               token_limit=300)
