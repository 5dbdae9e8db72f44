"""Exact, offline token counting with bpe-openai's cl100k/o200k tables."""

from __future__ import annotations

import functools

from contextwm.domain.errors import InvalidArgument

# Texts up to this many characters are counted through a cache.
_SHORT = 64


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
        return len(self._encoding.encode_ordinary(text))

    @functools.lru_cache(maxsize=8192)  # noqa: B019 - one counter per encoding, never freed
    def _count_short(self, text: str) -> int:
        """Headings and line prefixes repeat on every retrieval; count each once."""
        return len(self._encoding.encode_ordinary(text))


@functools.cache
def token_counter(encoding: str) -> BpeTokenCounter:
    """The shared counter of an encoding (the tables load once per process)."""
    return BpeTokenCounter(encoding)
