"""Whether a text (a compaction summary, a ledger) quotes one of the items being erased: holds
a run of its words, or names it the way an extractive summary labels its quotes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# A run of this many characters of an erased item (whitespace collapsed, case folded) found in
# a text makes the text a quote of it. Long enough that common phrases ("in the file", "the
# tests pass") are not taken for quotes, short enough to catch the head or tail of an item
# an extractive summary clipped (it keeps at least 40 characters of each end).
QUOTE_CHARS = 24
# An item shorter than QUOTE_CHARS is a quote when the whole of it appears; shorter than
# this ("ok", "yes, go on") it is not taken for one: it would match in any summary.
MIN_QUOTE_CHARS = 8
# How an extractive summary labels a quoted item (compaction_text._quote).
_LABEL = re.compile(r"\[seq (\d+), ")
_SPACE = re.compile(r"\s+")


def normalised(text: str) -> str:
    """Whitespace runs as one space, case folded: a quote re-wrapped or re-cased still counts."""
    return _SPACE.sub(" ", text).strip().casefold()


def quoting(texts: Mapping[int, str], erased: Iterable[tuple[int, str]]) -> set[int]:
    """The keys of the texts that quote an erased item.

    The texts (summaries, ledgers: a few, each bounded) are cut into every QUOTE_CHARS-long
    run once; each erased item is then slid over once, so the work grows with the erased
    text and the memory with the texts checked, whatever was erased.

    Args:
        texts: the texts to check, by a key of the caller's.
        erased: (seq, content) of the items being erased.

    Returns:
        The keys of the texts holding a run of an erased item's text, the whole of a short
        one, or an extractive label naming its seq.
    """
    if not texts:
        return set()
    folded = {key: normalised(text) for key, text in texts.items()}
    runs: dict[str, set[int]] = {}
    for key, text in folded.items():
        for start in range(len(text) - QUOTE_CHARS + 1):
            runs.setdefault(text[start : start + QUOTE_CHARS], set()).add(key)
    labels: dict[int, set[int]] = {}
    for key, text in texts.items():
        for match in _LABEL.finditer(text):
            labels.setdefault(int(match[1]), set()).add(key)
    found: set[int] = set()
    for seq, content in erased:
        found |= labels.get(seq, set())
        item = normalised(content)
        if len(item) < QUOTE_CHARS:
            if len(item) >= MIN_QUOTE_CHARS:
                found |= {key for key, text in folded.items() if item in text}
            continue
        for start in range(len(item) - QUOTE_CHARS + 1):
            keys = runs.get(item[start : start + QUOTE_CHARS])
            if keys:
                found |= keys
                if len(found) == len(texts):
                    return found
    return found
