"""Precision and recall of the offline fact extractor on the labelled sets in tests/data/.

Run: .venv/bin/python benchmarks/extractor_quality.py [path.json ...]
With no path it runs DEFAULT_SETS (the sets with a floor in tests/conversations/
test_providers.py) and then FAMILIES_SET (issue 10's set, no floor yet).

Each conversation goes through `ExtractiveLLM().summarize_and_extract` batch by batch and
session by session, as the pipeline sends it: a conversation without "batches" is one batch;
each batch gets the set's aliases with the short forms of the legacy's first names, and the
kinship aliases computed from the user's messages of its session up to the batch's end (as
conversations.services.summarization does) and the facts that are current
so far as `known_facts` ("f1", "f2", … in the order they were filed). A returned fact whose
`supersedes` names one of those refs replaces that fact; a returned fact that repeats a current
one word for word (case and punctuation ignored) is not added, as the facts app does not add
it; a `supersedes` naming no known ref is a malformed output and the batch stores nothing.

Scoring, per conversation, on the facts that are current at its end: a predicted fact matches a
labelled fact or a "must_not_file" statement when their word sets overlap with a Jaccard
similarity of at least MATCH_THRESHOLD, one to one, best pairs first (a tie goes to the
labelled fact). Matched to a labelled fact: a hit, whose category is scored separately;
matched to a must_not_file statement: "wrongly filed"; unmatched: spurious. Precision counts
both wrongly filed and spurious facts as misses. The format of the sets is in docs/quality.md.
"""

import json
import os
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DATA = ROOT / "tests" / "data"
DEFAULT_SETS = (DATA / "extractor_dev.json", DATA / "extractor_holdout.json",
                DATA / "extractor_blind.json")
FAMILIES_SET = DATA / "extractor_families.json"
MATCH_THRESHOLD = 0.5
MUST_NOT_FILE_KINDS = ("corrected", "contradicted", "assistant", "hedge", "other_person", "user")


def _words(text: str, names: tuple[str, ...] = ()) -> set[str]:
    words = set(re.findall(r"[a-z0-9]+", text.lower()))
    # Which of the person's names a fact uses ("Sam" or "Samuel") is not what is scored.
    named = {n.lower() for name in names for n in re.findall(r"[A-Za-z]+", name)}
    return {"legacy" if w in named else w for w in words}


def similarity(a: str, b: str, names: tuple[str, ...] = ()) -> float:
    wa, wb = _words(a, names), _words(b, names)
    return len(wa & wb) / len(wa | wb) if wa | wb else 0.0


def _same_text(a: str, b: str) -> bool:
    """The facts app's exact-duplicate key: case, punctuation and spacing ignored."""
    def key(text: str) -> str:
        return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())
    return key(a) == key(b)


@dataclass
class WronglyFiled:
    conversation: str
    kind: str
    fact: str       # what the extractor filed
    statement: str  # the must_not_file statement it matched


@dataclass
class Report:
    name: str
    predicted: int = 0
    labelled: int = 0
    matched: int = 0
    category_correct: int = 0
    misses: list[str] = field(default_factory=list)
    spurious: list[str] = field(default_factory=list)
    must_not_file: Counter = field(default_factory=Counter)  # statements per kind
    wrongly_filed: list[WronglyFiled] = field(default_factory=list)
    batches: int = 0
    superseded: int = 0
    malformed: list[str] = field(default_factory=list)  # batches whose output stored nothing

    @property
    def precision(self) -> float:
        return self.matched / self.predicted if self.predicted else 1.0

    @property
    def recall(self) -> float:
        return self.matched / self.labelled if self.labelled else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def category_accuracy(self) -> float:
        return self.category_correct / self.matched if self.matched else 0.0

    def wrongly_filed_by_kind(self) -> Counter:
        return Counter(w.kind for w in self.wrongly_filed)

    def wrongly_filed_rate(self, kind: str | None = None) -> float:
        """Wrongly filed statements per 100 must_not_file statements (of one kind)."""
        total = self.must_not_file[kind] if kind else sum(self.must_not_file.values())
        count = self.wrongly_filed_by_kind()[kind] if kind else len(self.wrongly_filed)
        return 100 * count / total if total else 0.0


def _sessions(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation's sessions, each {"messages": […], "batches": […]}: a conversation
    without "sessions" is one session."""
    sessions = conversation.get("sessions") or [
        {"messages": conversation["messages"], "batches": conversation.get("batches", [])}]
    for session in sessions:
        ends = session.get("batches", [])
        if any(not 0 < end < len(session["messages"]) for end in ends) or ends != sorted(set(ends)):
            raise ValueError(f"{conversation['id']}: batches must be increasing message counts "
                             f"inside the session, got {ends}")
    return sessions


def _default_provider() -> Any:
    # The provider's summary counts tokens with the encoding the settings name; nothing
    # else is read from them, and no database is used.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings_test")
    from memory_site.core.ai.offline.provider import ExtractiveLLM

    return ExtractiveLLM()


def current_facts(conversation: dict[str, Any], provider: Any, report: Report) -> list[Any]:
    """Run the conversation through `provider` batch by batch and return the facts that are
    current at its end (ExtractedFact objects), applying supersedes as the product does."""
    # Imported here so that `--help`-style use needs no Django; the extractor itself does not.
    from memory_site.core.ai.base import KnownFact, TranscriptLine
    from memory_site.core.language.kinship import KinshipReader
    from memory_site.core.language.names import short_forms
    from memory_site.core.language.sentences import display_name

    # As conversations.services.summarization.legacy_aliases does: the set's aliases (first
    # name, nickname) and the short forms of the legacy's first names ("Gene" for Eugene).
    names = [*conversation["aliases"], *short_forms(
        [display_name(conversation["legacy_name"]), *conversation["aliases"]])]
    current: list[Any] = []
    # As Conversation.called_name carries it: the name the family calls the person by, said
    # in an earlier session, until a session says another.
    called_before = None
    for session_number, session in enumerate(_sessions(conversation), start=1):
        lines = [TranscriptLine(sequence=i, role=m["role"], content=m["content"])
                 for i, m in enumerate(session["messages"])]
        start = 0
        for end in [*session.get("batches", []), len(lines)]:
            # As the pipeline does: the kinship words that mean the person, from all the user
            # said in this conversation up to the batch's end.
            reader = KinshipReader(conversation["legacy_name"], names)
            reader.read([line.content for line in lines[:end] if line.role == "user"])
            known = [KnownFact(ref=f"f{i + 1}", content=fact.content)
                     for i, fact in enumerate(current)]
            called = reader.called or called_before
            result = provider.summarize_and_extract(
                messages=lines[start:end], legacy_name=conversation["legacy_name"],
                aliases=reader.batch_aliases(names, called),
                known_facts=known, called=called,
            )
            report.batches += 1
            current = apply_extraction(current, known, result.facts, report,
                                       f"{conversation['id']} session {session_number} "
                                       f"messages {start}-{end}")
            start = end
        called_before = reader.called or called_before
    return current


def apply_extraction(current: list[Any], known: Sequence[Any], facts: Sequence[Any],
                     report: Report, where: str) -> list[Any]:
    """The current facts after one batch's extraction: superseded facts are replaced, new
    ones added unless they repeat a current fact. A `supersedes` that names no known ref
    stores nothing (a malformed output)."""
    refs = {fact.ref: index for index, fact in enumerate(known)}
    superseding = [fact.supersedes for fact in facts if fact.supersedes is not None]
    if any(ref not in refs for ref in superseding):
        report.malformed.append(f"{where}: supersedes {superseding}, known {sorted(refs)}")
        return current
    replaced = {refs[ref] for ref in superseding}
    report.superseded += len(replaced)
    kept = [fact for index, fact in enumerate(current) if index not in replaced]
    for fact in facts:
        if fact.supersedes is None and any(_same_text(fact.content, c.content) for c in kept):
            continue
        kept.append(fact)
    return kept


def score(conversation: dict[str, Any], predicted: Sequence[Any], report: Report) -> None:
    gold = conversation["facts"]
    forbidden = conversation.get("must_not_file", [])
    for statement in forbidden:
        if statement["kind"] not in MUST_NOT_FILE_KINDS:
            raise ValueError(f"{conversation['id']}: unknown must_not_file kind "
                             f"{statement['kind']!r}")
        report.must_not_file[statement["kind"]] += 1
    targets = [(True, g["content"]) for g in gold] + [(False, s["content"]) for s in forbidden]
    report.predicted += len(predicted)
    report.labelled += len(gold)
    names = (conversation["legacy_name"], *conversation["aliases"])
    pairs = sorted(
        ((similarity(p.content, text, names), is_label, i, j)
         for i, p in enumerate(predicted) for j, (is_label, text) in enumerate(targets)),
        reverse=True,
    )
    used_p: set[int] = set()
    used_t: set[int] = set()
    for similarity_, is_label, i, j in pairs:
        if similarity_ < MATCH_THRESHOLD or i in used_p or j in used_t:
            continue
        used_p.add(i)
        used_t.add(j)
        if is_label:
            report.matched += 1
            report.category_correct += predicted[i].category == gold[j]["category"]
        else:
            statement = forbidden[j - len(gold)]
            report.wrongly_filed.append(WronglyFiled(
                conversation["id"], statement["kind"], predicted[i].content, statement["content"]))
    report.misses += [f"{conversation['id']}: {g['content']}" for j, g in enumerate(gold)
                      if j not in used_t]
    report.spurious += [f"{conversation['id']}: {p.content}" for i, p in enumerate(predicted)
                        if i not in used_p]


def evaluate(path: Path, provider: Any = None) -> Report:
    """Score one labelled set; `provider` defaults to the offline ExtractiveLLM."""
    provider = provider if provider is not None else _default_provider()
    data = json.loads(Path(path).read_text())
    report = Report(name=Path(path).stem)
    for conversation in data["conversations"]:
        score(conversation, current_facts(conversation, provider, report), report)
    return report


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or [*DEFAULT_SETS, FAMILIES_SET]
    for path in paths:
        r = evaluate(path)
        print(f"{r.name}: labelled={r.labelled} predicted={r.predicted} matched={r.matched} "
              f"precision={r.precision:.2f} recall={r.recall:.2f} f1={r.f1:.2f} "
              f"category_accuracy={r.category_accuracy:.2f}")
        if r.must_not_file:
            by_kind = r.wrongly_filed_by_kind()
            kinds = " ".join(
                f"{kind}={by_kind[kind]}/{r.must_not_file[kind]}"
                f"({r.wrongly_filed_rate(kind):.1f})"
                for kind in MUST_NOT_FILE_KINDS if r.must_not_file[kind])
            print(f"  wrongly filed: {len(r.wrongly_filed)}/{sum(r.must_not_file.values())} "
                  f"must_not_file statements, {r.wrongly_filed_rate():.1f} per 100; {kinds}")
            print(f"  batches={r.batches} superseded={r.superseded} malformed={len(r.malformed)}")
        for miss in r.misses:
            print(f"  missed:   {miss}")
        for extra in r.spurious:
            print(f"  spurious: {extra}")
        for wrong in r.wrongly_filed:
            print(f"  wrongly filed ({wrong.kind}): {wrong.conversation}: {wrong.fact}"
                  f"  [= {wrong.statement}]")
        for malformed in r.malformed:
            print(f"  malformed: {malformed}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
