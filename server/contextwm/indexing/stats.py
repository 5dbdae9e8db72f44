"""What the indexer has embedded since the server started: items, seconds spent embedding,
and batches by size, for the metrics."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EmbeddingTotals:
    items: int
    seconds: float
    batches: Mapping[int, int]  # how many batches of each size


class EmbeddingStats:
    """Written by the indexer thread, read by scrapes from another: a lock keeps a reader
    from seeing the batch counts change under it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items = 0
        self._seconds = 0.0
        self._batches: Counter[int] = Counter()

    def record(self, size: int, seconds: float) -> None:
        """One batch of size items, embedded in seconds."""
        with self._lock:
            self._items += size
            self._seconds += seconds
            self._batches[size] += 1

    def totals(self) -> EmbeddingTotals:
        with self._lock:
            return EmbeddingTotals(self._items, self._seconds, dict(self._batches))
