"""Cutting text to a token budget at a natural boundary: a paragraph, a heading, a line."""

from __future__ import annotations

import re

from contextwm.domain.errors import InvalidArgument
from contextwm.ports.tokens import TokenCounter

_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_FENCE = re.compile(r" {0,3}(```|~~~)")


def _boundaries(text: str) -> tuple[list[int], list[int]]:
    """Cut offsets: (paragraph breaks and heading starts, ends of lines).

    Blank lines and `#` lines inside fenced code are not paragraph breaks or headings.
    """
    paragraphs: list[int] = []
    line_ends: list[int] = []
    start, fence, previous_blank, seen_text = 0, "", False, False
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        line = text[start:end].rstrip("\r\n")
        blank = not line.strip()
        if not fence and seen_text and ((blank and not previous_blank) or _HEADING.match(line)):
            paragraphs.append(start)
        if marker := _FENCE.match(line):
            fence = "" if fence == marker.group(1) else fence or marker.group(1)
        if text[end - 1] == "\n":
            line_ends.append(end)
        previous_blank, seen_text = blank, seen_text or not blank
        start = end
    return paragraphs, line_ends


def _longest_fitting(text: str, cuts: list[int], counter: TokenCounter, max_tokens: int) -> int:
    """The largest cut whose prefix fits, by bisection (prefix counts grow with length)."""
    low, high, best = 0, len(cuts) - 1, 0
    while low <= high:
        middle = (low + high) // 2
        if counter.count(text[: cuts[middle]]) <= max_tokens:
            best, low = cuts[middle], middle + 1
        else:
            high = middle - 1
    return best


def trim_at_boundary(text: str, counter: TokenCounter, max_tokens: int) -> str:
    """The longest prefix of text that fits max_tokens and ends at a natural boundary.

    Args:
        text: Markdown or plain text (a project doc, typically).
        counter: the conversation's token counter.
        max_tokens: the share the text may take.

    Returns:
        text itself when it fits; else the longest prefix ending right before a blank line
        or a Markdown heading (those inside fenced code do not count); if not even the
        first paragraph fits, the longest prefix ending after a newline; else "".

    Raises:
        InvalidArgument: max_tokens is negative.
    """
    if max_tokens < 0:
        raise InvalidArgument(f"max_tokens may not be negative, got {max_tokens}")
    if counter.count(text) <= max_tokens:
        return text
    for cuts in _boundaries(text):
        if best := _longest_fitting(text, cuts, counter, max_tokens):
            return text[:best]
    return ""
