"""The offline extractor and summariser, the quality benchmark, and the openai provider against a fake server."""

import importlib.util
from pathlib import Path

import pytest

from memory_site.core.ai import LLMError, TranscriptLine, count_tokens, get_embedder, get_llm
from memory_site.core.ai.base import EmbeddingError, LLMOutputError
from memory_site.core.ai.embeddings import HashingEmbedder
from memory_site.core.ai.offline.facts import extract_facts
from memory_site.core.ai.offline.summarizer import extractive_summary, rolling_summary
from memory_site.core.language.kinship import kinship_aliases
from tests.support.chunks import cosine_distance

ROOT = Path(__file__).resolve().parents[2]


def lines(*pairs):
    return [TranscriptLine(sequence=i, role=role, content=text)
            for i, (role, text) in enumerate(pairs)]


def facts_of(*pairs, name="Rose Whitfield", aliases=("Rose",)):
    """Facts of one batch, with the kinship aliases the pipeline would pass for it."""
    kin = kinship_aliases([text for role, text in pairs if role == "user"], name, aliases)
    return [(f.category, f.content) for f in extract_facts(lines(*pairs), name, [*aliases, *kin])]


def test_only_what_the_user_said_about_the_legacy():
    assert facts_of(
        ("assistant", "Rose was a famous pianist in Vienna."),
        ("user", "Rose was a nurse in Dayton."),
        ("user", "I was born in 1960 and I worked as a teacher."),
        ("user", "My brother Tom lives in Toledo."),
    ) == [("occupation", "Rose was a nurse in Dayton.")]


def test_questions_and_hypotheticals_are_not_facts():
    assert facts_of(
        ("user", "Was Mom born in 1931?"),
        ("user", "If she had retired earlier, she would have traveled."),
        ("user", "Maybe Mom liked jazz."),
        ("user", "I think Mom was happiest in Ohio."),
        ("user", "Did Mom ever go to Paris"),
    ) == []


@pytest.mark.parametrize(("said", "fact"), [
    ("Dad worked at the mill.", "Harold worked at the mill."),
    ("My father worked at the mill.", "Harold worked at the mill."),
    ("Hal worked at the mill.", "Harold worked at the mill."),
    ("Grandpa Hal worked at the mill.", "Harold worked at the mill."),
    ("My late father's favorite song was Danny Boy.", "Harold's favorite song was Danny Boy."),
])
def test_name_nickname_and_kinship_words(said, fact):
    assert [c for _, c in facts_of(("user", said), name="Harold Brennan", aliases=("Hal",))] == [
        fact]


def test_pronouns_follow_the_person_in_focus():
    # "Mom" is the alias an earlier batch established ("my mom, Rose").
    assert facts_of(
        ("assistant", "What was your mother's job?"),
        ("user", "She was a nurse. Her favorite flower was the peony."),
        ("user", "My brother Tom visited. He was a pilot."),
        aliases=("Rose", "Mom"),
    ) == [("occupation", "Rose was a nurse."), ("preference", "Rose's favorite flower was the peony.")]


def test_corrections_replace_the_corrected_value():
    # Mom and Dad in one batch: "Mom" is Rose only because an earlier batch linked them.
    assert facts_of(
        ("user", "Mom married Dad in 1961."),
        ("user", "Actually, it was 1962."),
        ("user", "Mom was born in Dayton."),
        ("user", "Sorry, I mean she was born in Toledo."),
        aliases=("Rose", "Mom"),
    ) == [("relationship", "Rose married Dad in 1962."), ("milestone", "Rose was born in Toledo.")]


def test_a_not_correction_fixes_the_value_where_it_was_said():
    assert facts_of(
        ("user", "Mom retired in 1993 and moved to Florida. She passed away in 2019."),
        ("user", "Actually, she retired in 1994, not 1993."),
    ) == [("milestone", "Rose retired in 1994 and moved to Florida."),
          ("milestone", "Rose passed away in 2019.")]


@pytest.mark.parametrize(("said", "category"), [
    ("Mom was born in 1931.", "milestone"),
    ("Mom worked as a seamstress.", "occupation"),
    ("Mom had three sisters.", "relationship"),
    ("Mom always hummed while cooking.", "habit"),
    ("Mom loved knitting.", "hobby"),
    ("Mom's favorite color was blue.", "preference"),
    ("Mom was kind and stubborn.", "personality"),
    ("Mom had a red bicycle.", "other"),
])
def test_categories(said, category):
    assert facts_of(("user", said))[0][0] == category


def test_extractive_summary_keeps_informative_user_sentences_within_the_limit():
    transcript = lines(
        ("user", "Ok."),
        ("assistant", "Tell me about Rose."),
        ("user", "Rose was born in Dayton in 1931. She had a garden. Hmm."),
        ("user", "What should I say?"),
    )
    assert extractive_summary(transcript, 200, ["Rose"]) == (
        "Rose was born in Dayton in 1931. She had a garden.")
    # Within a budget for one sentence, the one with a name, a place and a date wins.
    budget = count_tokens("Rose was born in Dayton in 1931.") + 3
    assert extractive_summary(transcript, budget, ["Rose"]) == "Rose was born in Dayton in 1931."


def test_rolling_summary_drops_lines_before_the_window():
    previous = "[0] Rose was born in Dayton in 1931.\n[4] Rose was a nurse in Ohio."
    new = [TranscriptLine(sequence=6, role="user", content="Rose married Tom in 1955.")]
    assert rolling_summary(previous_summary=previous, messages=new, window_start=2,
                           token_limit=200) == (
        "[4] Rose was a nurse in Ohio.\n[6] Rose married Tom in 1955.")


def test_rolling_summary_keeps_the_agents_latest_question_and_offer_marked():
    said = [
        TranscriptLine(sequence=0, role="user", content="Rose was born in Dayton in 1931."),
        TranscriptLine(sequence=1, role="assistant",
                       content="Lovely. What was her favourite colour?"),
        TranscriptLine(sequence=2, role="user", content="Her favourite colour was blue."),
        TranscriptLine(sequence=3, role="assistant", content=(
            "Blue suits her. Would you like me to remember that her favourite colour was blue?")),
    ]
    summary = rolling_summary(previous_summary=None, messages=said, window_start=0,
                              token_limit=200)
    assert summary.splitlines() == [
        "[0] Rose was born in Dayton in 1931.",
        "[1] The agent asked: What was her favourite colour?",
        "[2] Her favourite colour was blue.",
        "[3] The agent offered: Would you like me to remember that her favourite colour was "
        "blue?",
    ]
    # Within a budget for one line, the agent's offer wins over the user's sentences; a
    # newer question replaces the older ones.
    offer = "[3] The agent offered: Would you like me to remember that her favourite colour was blue?"
    assert rolling_summary(previous_summary=None, messages=said, window_start=0,
                           token_limit=count_tokens(offer) + 3) == offer
    later = [TranscriptLine(sequence=5, role="assistant", content="Shall I note where she lived?")]
    assert rolling_summary(previous_summary=summary, messages=later, window_start=0,
                           token_limit=200).splitlines() == [
        "[0] Rose was born in Dayton in 1931.",
        "[2] Her favourite colour was blue.",
        "[5] The agent offered: Shall I note where she lived?",
    ]


def _hashed(embedder: HashingEmbedder, text: str) -> list[float]:
    """The embedder's vector of `text` before the rotation, every slot."""
    slots = embedder._hashed(text)
    return [slots.get(i, 0.0) for i in range(embedder.dimensions)]


def _hamming(a: list[float], b: list[float]) -> int:
    """The Hamming distance of the sign bits, as pgvector's binary_quantize sets them."""
    return sum((x > 0) != (y > 0) for x, y in zip(a, b, strict=True))


def test_the_hashing_embedders_rotation_keeps_every_cosine_and_makes_its_sign_bits_useful():
    embedder = HashingEmbedder(1024)
    said = ("Her neighbour Mr. Okafor swapped okra seeds with her every spring, and she never "
            "learned to cook it.")
    query, unrelated = "What seeds did Mr. Okafor swap?", "Thank you for sharing that."
    rotated = embedder.embed([said, query, unrelated])
    hashed = [_hashed(embedder, text) for text in (said, query, unrelated)]

    # The same cosines as the hashed (sparse) vectors: what exact ranking sees is unchanged.
    for i, j in ((0, 1), (1, 2), (0, 2)):
        assert cosine_distance(rotated[i], rotated[j]) == pytest.approx(
            cosine_distance(hashed[i], hashed[j]), abs=1e-9)
    # Dense, so that the sign bits follow the angle: the message that answers the question is
    # nearer by bits than a short unrelated line. Without the rotation the short line was
    # (its few set bits differ from the query's in fewer places).
    assert all(x != 0.0 for x in rotated[0])
    assert _hamming(rotated[1], rotated[0]) < _hamming(rotated[1], rotated[2])
    assert _hamming(hashed[1], hashed[0]) > _hamming(hashed[1], hashed[2])
    # A change of these numbers is a new model: conversations.embedding.model_key must change.
    assert embedder.embed(["Rose kept bees."])[0][:4] == pytest.approx(
        [0.037594103034, -0.037594103034, 0.015664209597, -0.015664209597], abs=1e-11)
    assert embedder.embed([]) == []


def test_function_words_say_nothing_to_the_hashing_embedder():
    """Snowball's English stop words are left out, so a question's "how did they … there" does
    not make it similar to every question the agent asked."""
    question, word = HashingEmbedder(1024).embed(["How did they get there?", "get"])
    assert cosine_distance(question, word) == pytest.approx(0.0, abs=1e-12)


def test_the_rotation_is_orthogonal_and_dense_for_any_number_of_dimensions():
    for dimensions in (8, 1000, 1536):
        embedder = HashingEmbedder(dimensions)
        texts = ["Rose kept bees behind the barn.", "The bees of Rose.", ""]
        rotated = embedder.embed(texts)
        hashed = [_hashed(embedder, text) for text in texts]
        for text, vector, sparse in zip(texts, rotated, hashed, strict=True):
            assert len(vector) == dimensions
            assert sum(x * x for x in vector) == pytest.approx(1.0, abs=1e-12)
            if text:  # dense, whatever the dimensions (a few sums may cancel exactly)
                assert sum(x == 0.0 for x in vector) <= dimensions // 100
            assert cosine_distance(vector, rotated[0]) == pytest.approx(
                cosine_distance(sparse, hashed[0]), abs=1e-9)


# Recall floors per set, just under each set's score (docs/quality.md). They were 0.85 for
# every set until the kinship rule: a conversation that speaks of two parent/grandparent
# families and ties neither to the person's name ("Pop …" and "my mom", "Dad …" and "my
# mother") now yields no fact through a kinship word, by design (a wrong fact about
# someone's late mother is worse than a missed one). That costs the holdout hold-nana (4 of
# 19 facts) and the blind blind-pop (5 of 15); the labels were left as written.
RECALL_FLOORS = {"extractor_dev": 0.85, "extractor_holdout": 0.7, "extractor_blind": 0.5}


def test_quality_benchmark_meets_its_floor():
    spec = importlib.util.spec_from_file_location(
        "extractor_quality", ROOT / "benchmarks" / "extractor_quality.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for path in module.DEFAULT_SETS:
        report = module.evaluate(path)
        assert report.labelled >= 15
        # Precision first: it was 0.90 and every set now scores 1.00.
        assert report.precision >= 0.95, report.spurious
        assert report.recall >= RECALL_FLOORS[path.stem], report.misses
        assert report.category_accuracy >= 0.5


# --- the openai provider against tests/support/openai_server.py --------------------------------


@pytest.fixture
def openai_provider(settings, openai_server):
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = openai_server.base_url
    settings.LLM_API_KEY = "test-key"
    settings.LLM_MAX_RETRIES = 2
    settings.LLM_RETRY_BACKOFF_SECONDS = 0
    settings.LLM_TIMEOUT_SECONDS = 5
    return get_llm()


BATCH = [TranscriptLine(sequence=0, role="user", content="Mom was a nurse.")]
VALID = {"summary": "They talked about Rose's nursing.",
         "facts": [{"category": "occupation", "content": "Rose was a nurse."}]}


def test_valid_json_output(openai_provider, openai_server):
    openai_server.chat_json(VALID)
    result = openai_provider.summarize_and_extract(messages=BATCH, legacy_name="Rose Whitfield",
                                              aliases=["Rosie"])
    assert result.summary == "They talked about Rose's nursing."
    assert [(f.category, f.content) for f in result.facts] == [("occupation", "Rose was a nurse.")]
    [request] = openai_server.calls()
    assert request.body["response_format"] == {"type": "json_object"}
    assert request.headers["authorization"] == "Bearer test-key"
    assert "also called Rosie" in request.messages[0]["content"]
    assert "[0] user: Mom was a nurse." in request.messages[1]["content"]


def test_nul_characters_in_model_output_are_dropped_before_storage(openai_provider, openai_server):
    openai_server.chat_json({"summary": "They talked\u0000 about Rose.",
                             "facts": [{"category": "occupation", "content": "Rose\u0000 was a nurse."},
                                       {"category": "other", "content": "\u0000"}]})
    result = openai_provider.summarize_and_extract(messages=BATCH, legacy_name="Rose Whitfield")
    assert result.summary == "They talked about Rose."
    assert [(f.category, f.content) for f in result.facts] == [("occupation", "Rose was a nurse.")]
    openai_server.chat_json({"summary": "\u0000Rolling\u0000 summary."})
    summary = openai_provider.summarize_window(previous_summary=None, messages=BATCH, window_start=0,
                                          legacy_name="Rose Whitfield")
    assert summary == "Rolling summary."


def test_malformed_output_is_retried_then_rejected(openai_provider, openai_server):
    openai_server.chat_text("{not json").chat_json({"summary": "x"}).chat_json(VALID)
    assert openai_provider.summarize_and_extract(messages=BATCH, legacy_name="Rose").summary
    assert len(openai_server.calls()) == 3
    for _ in range(3):
        openai_server.chat_json({"summary": "x", "facts": "none"})
    with pytest.raises(LLMOutputError, match="after 3 attempts"):
        openai_provider.summarize_and_extract(messages=BATCH, legacy_name="Rose")


def test_truncated_output_is_rejected(settings, openai_provider, openai_server):
    settings.LLM_MAX_RETRIES = 0
    llm = get_llm()
    openai_server.chat_text('{"summary": "Rose was', finish_reason="length")
    with pytest.raises(LLMOutputError, match="cut off"):
        llm.summarize_window(previous_summary=None, messages=BATCH, window_start=0,
                             legacy_name="Rose")


@pytest.mark.parametrize("status", [500, 429, 503])
def test_server_errors_and_rate_limits_are_retried(openai_provider, openai_server, status):
    openai_server.error(status, headers={"Retry-After": "0"}).chat_json({"summary": "Fine."})
    assert openai_provider.summarize_window(previous_summary="[0] x", messages=BATCH, window_start=0,
                                       legacy_name="Rose") == "Fine."
    assert len(openai_server.calls()) == 2


def test_retries_are_bounded(openai_provider, openai_server):
    for _ in range(3):
        openai_server.error(500)
    with pytest.raises(LLMError, match="after 3 attempts"):
        openai_provider.summarize_window(previous_summary=None, messages=BATCH, window_start=0,
                                    legacy_name="Rose")
    assert len(openai_server.calls()) == 3


def test_a_client_error_is_not_retried(openai_provider, openai_server):
    openai_server.error(400, "bad request")
    with pytest.raises(LLMError):
        openai_provider.summarize_and_extract(messages=BATCH, legacy_name="Rose")
    assert len(openai_server.calls()) == 1


def test_timeouts(settings, openai_server):
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = openai_server.base_url
    settings.LLM_TIMEOUT_SECONDS = 0.2
    settings.LLM_MAX_RETRIES = 1
    settings.LLM_RETRY_BACKOFF_SECONDS = 0
    openai_server.delay(1.0).delay(1.0)
    with pytest.raises(LLMError, match="timed out"):
        get_llm().summarize_and_extract(messages=BATCH, legacy_name="Rose")
    assert len(openai_server.calls()) == 2


def test_chat_with_tool_calls(openai_provider, openai_server):
    openai_server.chat_tool_calls([("remember", {"subject": "Rose"})], content=None)
    reply = openai_provider.chat(messages=[{"role": "user", "content": "hi"}],
                            tools=[{"type": "function", "function": {"name": "remember",
                                                                     "parameters": {}}}])
    assert reply.content == ""
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_0", "remember", '{"subject": "Rose"}')]
    assert openai_server.calls()[0].body["tools"][0]["function"]["name"] == "remember"


def test_chat_joins_text_parts_and_leaves_other_parts_out(openai_provider, openai_server):
    openai_server.chat_message({"role": "assistant", "content": [
        {"type": "text", "text": "Rose "}, {"type": "image_url", "image_url": {"url": "x"}},
        {"type": "text", "text": "sang."},
    ], "tool_calls": [{"id": "call_0", "type": "function",
                       "function": {"name": "remember", "arguments": ""}}]})
    reply = openai_provider.chat(messages=[{"role": "user", "content": "hi"}], tools=[])
    assert reply.content == "Rose sang."
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("call_0", "remember", "{}")]


def test_embeddings_through_the_fake_server(settings, openai_server):
    settings.EMBEDDING_PROVIDER = "openai"
    settings.EMBEDDING_BASE_URL = openai_server.base_url
    settings.EMBEDDING_MAX_RETRIES = 0
    settings.EMBEDDING_DIMENSIONS = 3
    openai_server.embeddings([[0.1, 0.2, 0.3]])
    assert get_embedder().embed(["Rose"]) == [[0.1, 0.2, 0.3]]
    openai_server.embeddings([[0.1, 0.2]])
    with pytest.raises(EmbeddingError, match="wrong size"):
        get_embedder().embed(["Rose"])
