"""A running count that many threads add to, read by the metrics at scrape time."""

from __future__ import annotations

import threading


class Tally:
    """Thread-safe: `+=` on a shared int can lose an update when two threads interleave, and
    the threads here hold different conversations' locks."""

    __slots__ = ("_lock", "_value")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value = 0

    def add(self, n: int = 1) -> None:
        with self._lock:
            self._value += n

    @property
    def value(self) -> int:
        return self._value
