"""Exact, offline token counting with bpe-openai's cl100k/o200k tables."""

from __future__ import annotations

import functools

from contextwm.domain.errors import InvalidArgument

# Texts up to this many characters are counted through a cache.
_SHORT = 64
# Longer texts are counted in pieces of at most this many characters: the library refuses
# inputs of 1,000,000 characters and results over 200,000 tokens, and a character is at
# most 4 bytes, so at most 4 tokens.
_PIECE = 50_000


class BpeTokenCounter:
    """A TokenCounter for one tiktoken-compatible encoding."""

    def __init__(self, encoding: str) -> None:
        import bpe_openai

        try:
            self._encoding = bpe_openai.get_encoding(encoding)
        except Exception as exc:  # the library raises its own error types for unknown names
            raise InvalidArgument(f"unknown token encoding {encoding!r}") from exc
        self._name = encoding

    @property
    def encoding(self) -> str:
        return self._name

    def count(self, text: str) -> int:
        # encode_ordinary: text like "<|endoftext|>" in user content is counted as text,
        # never rejected or treated as a control token.
        if len(text) <= _SHORT:
            return self._count_short(text)
        return sum(len(self._encoding.encode_ordinary(piece)) for piece in pieces(text))

    @functools.lru_cache(maxsize=8192)  # noqa: B019 - one counter per encoding, never freed
    def _count_short(self, text: str) -> int:
        """Headings and line prefixes repeat on every retrieval; count each once."""
        return len(self._encoding.encode_ordinary(text))


def pieces(text: str, size: int = _PIECE) -> list[str]:
    """text cut into pieces of at most size characters, each cut made before a space that
    follows a non-space where one is near, which is where the encoder's own pre-split cuts,
    so the pieces' counts add up to the whole text's."""
    out: list[str] = []
    start = 0
    while len(text) - start > size:
        end = start + size
        floor = end - 1000
        cut = text.rfind(" ", floor, end)
        while cut > floor and text[cut - 1].isspace():
            cut = text.rfind(" ", floor, cut)
        out.append(text[start : cut if cut > floor else end])
        start = cut if cut > floor else end
    out.append(text[start:])
    return out


class ShortCountCache:
    """The lookups of the short-text count cache (a CacheCounts), which every encoding's
    counter in the process shares."""

    @property
    def hits(self) -> int:
        return BpeTokenCounter._count_short.cache_info().hits

    @property
    def misses(self) -> int:
        return BpeTokenCounter._count_short.cache_info().misses

    def clear(self) -> None:
        """Forgets the cached texts (an erasure's may be among them)."""
        BpeTokenCounter._count_short.cache_clear()


@functools.cache
def token_counter(encoding: str) -> BpeTokenCounter:
    """The shared counter of an encoding (the tables load once per process)."""
    return BpeTokenCounter(encoding)
