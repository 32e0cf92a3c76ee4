"""Precision and recall of the offline fact extractor on the labelled sets in tests/data/.

Run: .venv/bin/python benchmarks/extractor_quality.py [path.json ...]
Each conversation is one batch; its kinship aliases are computed from all its user messages,
as conversations.services.summarization does. A predicted fact matches a labelled one when
their word sets overlap with a Jaccard similarity of at least MATCH_THRESHOLD (one-to-one,
best pairs first); the category is scored separately on the matched pairs.
"""

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DATA = ROOT / "tests" / "data"
DEFAULT_SETS = (DATA / "extractor_dev.json", DATA / "extractor_holdout.json",
                DATA / "extractor_blind.json")
MATCH_THRESHOLD = 0.5


def _words(text: str, names: tuple[str, ...] = ()) -> set[str]:
    words = set(re.findall(r"[a-z0-9]+", text.lower()))
    # Which of the person's names a fact uses ("Sam" or "Samuel") is not what is scored.
    named = {n.lower() for name in names for n in re.findall(r"[A-Za-z]+", name)}
    return {"legacy" if w in named else w for w in words}


def similarity(a: str, b: str, names: tuple[str, ...] = ()) -> float:
    wa, wb = _words(a, names), _words(b, names)
    return len(wa & wb) / len(wa | wb) if wa | wb else 0.0


@dataclass
class Report:
    name: str
    predicted: int = 0
    labelled: int = 0
    matched: int = 0
    category_correct: int = 0
    misses: list[str] = field(default_factory=list)
    spurious: list[str] = field(default_factory=list)

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


def evaluate(path: Path) -> Report:
    # Imported here so that `--help`-style use needs no Django; the extractor itself does not.
    from memory_site.core.ai.base import TranscriptLine
    from memory_site.core.ai.offline.facts import extract_facts
    from memory_site.core.language.kinship import kinship_aliases

    data = json.loads(path.read_text())
    report = Report(name=path.stem)
    for conversation in data["conversations"]:
        lines = [
            TranscriptLine(sequence=i, role=m["role"], content=m["content"])
            for i, m in enumerate(conversation["messages"])
        ]
        # As the pipeline does: the kinship words that mean the person, from all the user said.
        kin = kinship_aliases([line.content for line in lines if line.role == "user"],
                              conversation["legacy_name"], conversation["aliases"])
        predicted = extract_facts(lines, conversation["legacy_name"],
                                  [*conversation["aliases"], *kin])
        gold = conversation["facts"]
        report.predicted += len(predicted)
        report.labelled += len(gold)
        names = (conversation["legacy_name"], *conversation["aliases"])
        pairs = sorted(
            ((similarity(p.content, g["content"], names), i, j)
             for i, p in enumerate(predicted) for j, g in enumerate(gold)),
            reverse=True,
        )
        used_p: set[int] = set()
        used_g: set[int] = set()
        for score, i, j in pairs:
            if score < MATCH_THRESHOLD or i in used_p or j in used_g:
                continue
            used_p.add(i)
            used_g.add(j)
            report.matched += 1
            report.category_correct += predicted[i].category == gold[j]["category"]
        report.misses += [f"{conversation['id']}: {g['content']}" for j, g in enumerate(gold)
                          if j not in used_g]
        report.spurious += [f"{conversation['id']}: {p.content}" for i, p in enumerate(predicted)
                            if i not in used_p]
    return report


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or list(DEFAULT_SETS)
    for path in paths:
        r = evaluate(path)
        print(f"{r.name}: labelled={r.labelled} predicted={r.predicted} matched={r.matched} "
              f"precision={r.precision:.2f} recall={r.recall:.2f} f1={r.f1:.2f} "
              f"category_accuracy={r.category_accuracy:.2f}")
        for miss in r.misses:
            print(f"  missed:   {miss}")
        for extra in r.spurious:
            print(f"  spurious: {extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
