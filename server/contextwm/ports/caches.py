"""The read side of a cache that the metrics report: its lookups so far."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class CacheCounts(Protocol):
    """Lookups that found what they wanted (hits) and those that had to compute or load it
    (misses), since the server started. Read at scrape time, without the cache's lock."""

    @property
    def hits(self) -> int: ...

    @property
    def misses(self) -> int: ...


@runtime_checkable
class BoundedCache(CacheCounts, Protocol):
    """A cache bounded in bytes, whose size the metrics also report."""

    @property
    def bytes(self) -> int: ...

    @property
    def entries(self) -> int: ...

    @property
    def evictions(self) -> int: ...
