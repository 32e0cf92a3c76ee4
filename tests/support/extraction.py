"""One batch through the offline extractor as the pipeline runs it: the aliases it passes for
the legacy's name (legacy_aliases plus the kinship aliases of the user's lines) and known facts
with refs f1, f2, …"""

from conversations.services.summarization import legacy_aliases
from memory_site.core.ai import KnownFact, TranscriptLine
from memory_site.core.ai.offline.facts import extract_facts
from memory_site.core.language.kinship import KinshipReader


def lines(*said):
    """Transcript lines; a plain string is the user's, a (role, text) pair anyone's."""
    pairs = [s if isinstance(s, tuple) else ("user", s) for s in said]
    return [TranscriptLine(sequence=i, role=role, content=text)
            for i, (role, text) in enumerate(pairs)]


def corrected(*said, name, known=()):
    """(content, supersedes) of one batch, with the aliases the pipeline passes for `name`
    (conversations.services.summarization.conversation_names) and the name the family said
    they call the person by."""
    names = legacy_aliases(name)
    reader = KinshipReader(name, names)
    reader.read([line.content for line in lines(*said) if line.role == "user"])
    facts = extract_facts(lines(*said), name,
                          reader.batch_aliases(names),
                          [KnownFact(ref=f"f{i}", content=c) for i, c in enumerate(known, 1)],
                          called=reader.called)
    return [(f.content, f.supersedes) for f in facts]


def facts_of(*said, name):
    return [content for content, _ in corrected(*said, name=name)]


def quality_report(set_name: str):
    """benchmarks/extractor_quality.py's report of one labelled set in tests/data."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location(
        "extractor_quality", root / "benchmarks" / "extractor_quality.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.evaluate(root / "tests" / "data" / f"{set_name}.json")
