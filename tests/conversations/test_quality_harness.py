"""The quality benchmark's harness (benchmarks/extractor_quality.py) with a small rule-based
provider: batches and sessions, known facts, supersedes, and the wrongly-filed count."""

import importlib.util
import json
from pathlib import Path

import pytest

from memory_site.core.ai.base import ExtractedFact, KnownFact, SummaryExtraction

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "extractor_quality", ROOT / "benchmarks" / "extractor_quality.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class EchoProvider:
    """Files each user message of a batch as it is; a message "Sorry, …" is filed without
    "Sorry, " and supersedes `ref_for` of the known facts (by default the one that starts
    with the same three words)."""

    def __init__(self, ref_for=None):
        self.ref_for = ref_for or (lambda text, known: next(
            (k.ref for k in known if k.content.split()[:3] == text.split()[:3]), None))
        self.calls = []

    def summarize_and_extract(self, *, messages, legacy_name, aliases=(), known_facts=(),
                              called=None):
        self.calls.append(([m.content for m in messages], list(known_facts)))
        facts = []
        for message in messages:
            if message.role != "user":
                continue
            text, ref = message.content, None
            if text.startswith("Sorry, "):
                text = text.removeprefix("Sorry, ")
                ref = self.ref_for(text, known_facts)
            facts.append(ExtractedFact(category="relationship", content=text, supersedes=ref))
        return SummaryExtraction(summary="They talked.", facts=facts)


CONVERSATION = {
    "id": "rose",
    "legacy_name": "Rose Whitfield",
    "aliases": ["Rose"],
    "sessions": [
        {"batches": [2], "messages": [
            {"role": "user", "content": "Rose married Tom in 1961."},
            {"role": "assistant", "content": "Lovely."},
            {"role": "user", "content": "Rose was a nurse."},
        ]},
        {"messages": [
            {"role": "user", "content": "Sorry, Rose married Tom in 1962."},
            {"role": "user", "content": "rose was a nurse!"},
        ]},
    ],
    "facts": [
        {"category": "relationship", "content": "Rose married Tom in 1962."},
        {"category": "occupation", "content": "Rose was a nurse."},
    ],
    "must_not_file": [{"kind": "corrected", "content": "Rose married Tom in 1961."}],
}


def write_set(tmp_path, conversation=CONVERSATION):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps({"conversations": [conversation]}))
    return path


def test_a_correction_that_supersedes_replaces_the_known_fact(bench, tmp_path):
    provider = EchoProvider()
    report = bench.evaluate(write_set(tmp_path), provider=provider)
    # Three batches: messages 0-2 and 2-3 of the first session, then the second session;
    # each gets the facts current so far.
    assert provider.calls == [
        (["Rose married Tom in 1961.", "Lovely."], []),
        (["Rose was a nurse."], [KnownFact(ref="f1", content="Rose married Tom in 1961.")]),
        (["Sorry, Rose married Tom in 1962.", "rose was a nurse!"],
         [KnownFact(ref="f1", content="Rose married Tom in 1961."),
          KnownFact(ref="f2", content="Rose was a nurse.")]),
    ]
    assert (report.batches, report.superseded, report.malformed) == (3, 1, [])
    # The repeated "rose was a nurse!" is not added; the 1961 fact is no longer current.
    assert (report.predicted, report.matched, report.labelled) == (2, 2, 2)
    assert report.category_correct == 1
    assert report.wrongly_filed == [] and report.spurious == [] and report.misses == []
    assert report.must_not_file == {"corrected": 1}
    assert report.wrongly_filed_rate() == 0.0


def test_a_correction_that_stands_beside_the_old_fact_is_wrongly_filed(bench, tmp_path):
    report = bench.evaluate(write_set(tmp_path), provider=EchoProvider(lambda text, known: None))
    assert (report.batches, report.superseded) == (3, 0)
    # The 1961 fact matches its label at 0.67 too, but the must_not_file statement better.
    assert (report.predicted, report.matched, report.precision) == (3, 2, 2 / 3)
    assert report.wrongly_filed == [bench.WronglyFiled(
        "rose", "corrected", "Rose married Tom in 1961.", "Rose married Tom in 1961.")]
    assert report.wrongly_filed_rate("corrected") == 100.0
    assert report.spurious == [] and report.misses == []


def test_a_supersedes_naming_no_known_fact_stores_nothing_from_its_batch(bench, tmp_path):
    report = bench.evaluate(write_set(tmp_path), provider=EchoProvider(lambda text, known: "f9"))
    assert report.malformed == ["rose session 2 messages 0-2: supersedes ['f9'], known ['f1', 'f2']"]
    assert (report.predicted, report.matched, report.superseded) == (2, 1, 0)
    assert report.misses == ["rose: Rose married Tom in 1962."]
    assert [w.fact for w in report.wrongly_filed] == ["Rose married Tom in 1961."]


def test_batches_must_fall_inside_their_session(bench, tmp_path):
    broken = {**CONVERSATION, "sessions": [{**CONVERSATION["sessions"][0], "batches": [3]}]}
    with pytest.raises(ValueError, match="rose: batches must be increasing"):
        bench.evaluate(write_set(tmp_path, broken), provider=EchoProvider())
