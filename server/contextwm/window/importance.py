"""Detects importance flags (error, code, question, solution) from an item's content."""

from __future__ import annotations

import re

from contextwm.domain.items import Flag

_ERROR = re.compile(
    r"\b(error|exception|traceback|failed|failure|fatal|panic|segfault|stack trace|errno)\b"
    r"|(?-i:\b[A-Z][a-zA-Z]*(Error|Exception)\b)",
    re.IGNORECASE,
)
_FENCE = re.compile(r"```|~~~")
# A line that reads as code in the common languages agents work in.
_CODE_LINE = re.compile(
    r"^\s*(def |class |import |from \S+ import |function |const |let |var |return\b|if \(|for \("
    r"|#include|public |private |func |fn |package |SELECT |INSERT |CREATE |\$ )"
    r"|[;{}]\s*$|=>|\)\s*\{",
)
_QUESTION_START = re.compile(
    r"^\s*(how|what|why|when|where|which|who|whom|whose|can|could|would|should|is|are|do|does"
    r"|did|will|may|shall)\b",
    re.IGNORECASE,
)
_SOLUTION = re.compile(
    r"\b(fixed|solved|resolved|the fix|solution|workaround|root cause|that worked|now works)\b",
    re.IGNORECASE,
)


def detect_flags(role: str, content: str) -> Flag:
    """Flags a reader would put on this item; the client's own flags are added separately.

    Args:
        role: the item's role; an "error" role is always an error.
        content: the item's text.

    Returns:
        The detected flags (never PINNED, which only a client sets).
    """
    flags = Flag.NONE
    if role == "error" or _ERROR.search(content):
        flags |= Flag.ERROR
    if (
        _FENCE.search(content)
        or sum(1 for line in content.splitlines() if _CODE_LINE.search(line)) >= 2
    ):
        flags |= Flag.CODE
    if is_question(role, content):
        flags |= Flag.QUESTION
    if role == "assistant" and _SOLUTION.search(content):
        flags |= Flag.SOLUTION
    return flags


def is_question(role: str, content: str) -> bool:
    """Whether a user or assistant turn asks something (the QUESTION flag's rule)."""
    if role not in {"user", "assistant"}:
        return False
    stripped = content.rstrip()
    return (
        stripped.endswith("?")
        or "?\n" in content
        or (role == "user" and len(stripped) < 300 and _QUESTION_START.match(stripped) is not None)
    )
