"""What requests are doing, for the indexer to pace itself against: the time appends take
and the readers waiting for vectors."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class BusyMeter:
    """Sums the time threads spend inside one kind of call (the engine's appends)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds = 0.0

    @property
    def seconds(self) -> float:
        return self._seconds

    @contextmanager
    def timing(self) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            with self._lock:
                self._seconds += elapsed


class VectorWaiters:
    """Requests waiting for vectors, by conversation key; on_wait (set by the indexer) ends
    its pause, and the indexer embeds the waited-for conversations first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: Counter[int] = Counter()
        self.on_wait: Callable[[], None] = lambda: None

    @property
    def any(self) -> bool:
        return bool(self._keys)

    def conversations(self) -> list[int]:
        """The conversations readers wait for, longest-waited first."""
        with self._lock:
            return list(self._keys)

    @contextmanager
    def waiting(self, key: int) -> Iterator[None]:
        with self._lock:
            self._keys[key] += 1
        self.on_wait()
        try:
            yield
        finally:
            with self._lock:
                self._keys[key] -= 1
                if self._keys[key] <= 0:
                    del self._keys[key]
