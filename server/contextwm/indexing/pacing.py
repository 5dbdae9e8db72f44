"""How the background indexer paces itself against requests: acknowledgements first, unless
a reader is waiting for vectors.

Measured (scripts/bench_ingest.py, 4 producers on 2 cores): while appends arrive faster than
the model can embed them, an embedding batch running beside them took 0.6 of a core yet
embedded little, and cut acknowledgements from about 775/s to 595/s (ack p50 4.8 -> 5.8 ms);
holding the batches back until the burst ended cost nothing in total ingest time, since the
backlog is the same work either way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# Appends count as keeping the server busy when their summed time during a batch was at least
# this share of the batch's: one producer at 100 appends/s takes about 0.1, a burst 1 or more.
BUSY_SHARE = 0.5


def pause_after(batch_seconds: float, append_seconds: float, duty: float) -> float:
    """Seconds to pause after an embedding batch that took batch_seconds, during which
    appends took append_seconds (summed over threads): while appends keep the server busy,
    long enough that embedding runs only `duty` of the time; otherwise none.
    """
    if duty >= 1.0 or batch_seconds <= 0.0 or append_seconds < BUSY_SHARE * batch_seconds:
        return 0.0
    return batch_seconds * (1.0 - duty) / duty


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
