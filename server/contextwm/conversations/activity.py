"""What requests are doing, for the indexer to pace itself against: the time appends take
and the readers waiting for vectors."""

from __future__ import annotations

import threading
import time
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
    """Counts requests waiting for vectors; on_wait (set by the indexer) ends its pause."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self.on_wait: Callable[[], None] = lambda: None

    @property
    def any(self) -> bool:
        return self._count > 0

    @contextmanager
    def waiting(self) -> Iterator[None]:
        with self._lock:
            self._count += 1
        self.on_wait()
        try:
            yield
        finally:
            with self._lock:
                self._count -= 1
