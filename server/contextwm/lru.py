"""A small thread-safe least-recently-used map, for the caches of derived values."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _one(key: object, value: object) -> int:
    return 1


class Lru(Generic[K, V]):
    """Values whose sizes add up to at most max_size (each counts 1 unless size says
    otherwise); the least recently used goes first, and a value bigger than max_size is not
    kept. Counts its lookups that found a value (hits) and those that did not (misses), for
    the metrics."""

    def __init__(self, max_size: int, size: Callable[[K, V], int] = _one) -> None:
        self._max = max_size
        self._size_of = size
        self._size = 0
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._values.get(key)
            if value is not None:
                self._values.move_to_end(key)
                self.hits += 1
            else:
                self.misses += 1
            return value

    def put(self, key: K, value: V) -> None:
        size = self._size_of(key, value)
        with self._lock:
            old = self._values.pop(key, None)
            if old is not None:
                self._size -= self._size_of(key, old)
            if size > self._max:
                return
            self._values[key] = value
            self._size += size
            while self._size > self._max:
                dropped, gone = self._values.popitem(last=False)
                self._size -= self._size_of(dropped, gone)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._size = 0
