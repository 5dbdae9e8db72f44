"""Which rows of the active context a truncation removes (Cline's strategies), and its notice."""

from __future__ import annotations

import enum
from collections.abc import Sequence


class TruncationStrategy(enum.StrEnum):
    """How much of the rows after the first user/assistant pair to remove."""

    NONE = "none"  # everything after the first pair
    LAST_TWO = "last_two"  # all but the last two rows
    HALF = "half"  # about half of them
    QUARTER = "quarter"  # about three quarters: a quarter is kept


def truncation_range(roles: Sequence[str], strategy: TruncationStrategy) -> range:
    """The indices of the rows a truncation removes.

    The first user/assistant pair (the first "user" row and the first "assistant" row after
    it, with the tool outputs right after that) is always kept, and removal starts right
    after it; with no such pair nothing is removed. Of the `rest` rows after the pair, the
    strategy removes a count by Cline's formulas (none: rest; last_two: rest - 2; half:
    rest // 4 * 2; quarter: 3/4 of rest, rounded down to even). The end is then pulled
    back until the result is well formed for LLM APIs: the last removed row is not "user"
    (a request is never removed without its answer) and the first kept row after the range
    is not "tool" (a tool output never loses the assistant turn that called it). That may
    leave nothing to remove.

    Args:
        roles: the roles of the active context's remaining rows, in order.
        strategy: how much to remove.

    Returns:
        A contiguous range of indices into roles; range(0) when nothing is removed.
    """
    start = _after_first_pair(roles)
    if start is None:
        return range(0)
    rest = len(roles) - start
    if strategy is TruncationStrategy.NONE:
        count = rest
    elif strategy is TruncationStrategy.LAST_TWO:
        count = max(rest - 2, 0)
    elif strategy is TruncationStrategy.HALF:
        count = (rest // 4) * 2
    else:
        count = ((rest * 3) // 4 // 2) * 2
    end = start + count
    # Whether a given end is acceptable depends on the end alone, so this finds the largest
    # acceptable end not beyond the formula's (and a larger formula count never yields less).
    while end > start and (roles[end - 1] == "user" or (end < len(roles) and roles[end] == "tool")):
        end -= 1
    return range(start, end) if end > start else range(0)


def _after_first_pair(roles: Sequence[str]) -> int | None:
    """The index just after the first user/assistant pair and the tool outputs that answer
    its assistant turn (an API rejects a tool call whose output is missing), or None."""
    try:
        user = roles.index("user")
        end = roles.index("assistant", user + 1) + 1
    except ValueError:
        return None
    while end < len(roles) and roles[end] == "tool":
        end += 1
    return end


def truncation_notice(items: int, tokens: int) -> str:
    """The text shown in place of one contiguous run of removed items.

    Args:
        items: how many items the run holds.
        tokens: their stored tokens.

    Returns:
        One line saying what was removed, that it is archived and searchable, and that the
        first request was kept.
    """
    noun, verb = ("item", "was") if items == 1 else ("items", "were")
    return (
        f"[contextwm: {items:,} earlier {noun} ({tokens:,} tokens) {verb} removed here to keep "
        "the context within its limit; they are archived and searchable. The first request "
        "and the latest items are kept.]"
    )
