"""Exact token counts of a text made of paragraphs joined by blank lines, counted paragraph by
paragraph so that a paragraph seen before (a window turn, a hit that comes back) costs a
lookup instead of an encoding.

Why the counts add up: tiktoken-style encodings (cl100k, o200k) split text into words by a
pattern before they merge, and no word of that pattern runs past a line break into a
character that is neither white space nor "/": a word may end in line breaks ("." + "\\n\\n"
is one), but what follows them starts a word of its own. So a paragraph's tokens together
with the blank line after it are the same in the joined text as counted alone, as long as
the next paragraph begins with such a character. A paragraph that does not (indented code,
a path) is counted together with the one before it.
"""

from __future__ import annotations

from collections.abc import Sequence

from contextwm.lru import Lru
from contextwm.ports.tokens import TokenCounter

SEPARATOR = "\n\n"
# The cache holds paragraphs of at most this many characters in all.
MAX_CHARS = 8_000_000


def starts_a_word(paragraph: str) -> bool:
    """Whether the paragraph's tokens cannot merge with the blank line before it."""
    return bool(paragraph) and not paragraph[0].isspace() and paragraph[0] != "/"


class ParagraphTokens:
    """Counts paragraphs with their separator, least recently used first out of the cache.
    Thread-safe; its hits and misses are a CacheCounts for the metrics."""

    def __init__(self, max_chars: int = MAX_CHARS) -> None:
        # (encoding, text, whether a separator follows it) -> tokens, bounded by the texts'
        # characters
        self._counts: Lru[tuple[str, str, bool], int] = Lru(
            max_chars, size=lambda key, _: len(key[1])
        )

    @property
    def hits(self) -> int:
        return self._counts.hits

    @property
    def misses(self) -> int:
        return self._counts.misses

    def shares(self, counter: TokenCounter, paragraphs: Sequence[str]) -> list[int]:
        """Each paragraph's share of the tokens of SEPARATOR.join(paragraphs): its own with the
        separator after it (none after the last). The shares add up to the joined text's
        count exactly; a paragraph counted with the one before it (see starts_a_word) has
        a share of 0."""
        shares = [0] * len(paragraphs)
        start = 0
        for end in range(1, len(paragraphs) + 1):
            if end < len(paragraphs) and not starts_a_word(paragraphs[end]):
                continue
            unit = SEPARATOR.join(paragraphs[start:end])
            shares[start] = self._count(counter, unit, followed=end < len(paragraphs))
            start = end
        return shares

    def _count(self, counter: TokenCounter, text: str, *, followed: bool) -> int:
        """Tokens of text, with SEPARATOR after it when followed."""
        key = (counter.encoding, text, followed)
        tokens = self._counts.get(key)
        if tokens is None:
            tokens = counter.count(text + SEPARATOR if followed else text)
            self._counts.put(key, tokens)
        return tokens

    def clear(self) -> None:
        """Forgets every paragraph (an erasure's may be among them)."""
        self._counts.clear()


# One per process, as the encodings' tables are: a paragraph counts the same in every
# conversation of an encoding.
PARAGRAPH_TOKENS = ParagraphTokens()
