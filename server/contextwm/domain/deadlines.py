"""The caller's deadline, so that work nobody waits for any more stops early.

The transport sets it for each call; long waits and loops ask it. Without one (a call with
no client deadline, or code run outside a call) nothing stops early.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from contextwm.domain.errors import DeadlineExceeded

_deadline: ContextVar[float | None] = ContextVar("contextwm_deadline", default=None)


@contextmanager
def caller_deadline(seconds_left: float | None) -> Iterator[None]:
    """Work in this block belongs to a caller who waits seconds_left more (None: no limit)."""
    token = _deadline.set(None if seconds_left is None else time.monotonic() + seconds_left)
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining() -> float | None:
    """Seconds until the caller's deadline (negative once passed), or None without one."""
    at = _deadline.get()
    return None if at is None else at - time.monotonic()


def check(doing: str) -> None:
    """Raises DeadlineExceeded, saying what was being done, once the deadline has passed."""
    left = remaining()
    if left is not None and left <= 0:
        raise DeadlineExceeded(f"the caller's deadline passed while {doing}; stopped there")
