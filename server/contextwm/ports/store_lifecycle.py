"""The store's own upkeep: housekeeping off the request path, and closing it."""

from __future__ import annotations

from typing import Protocol


class StoreLifecycle(Protocol):
    """Called by whoever opened the store and by the background thread that maintains it."""

    def close(self) -> None: ...

    def reachable(self) -> bool:
        """Whether the store answers now (a database server may be down or restarting)."""
        ...

    def maintain(self) -> None:
        """Housekeeping that must not run on a request (SQLite: the WAL checkpoint)."""
        ...
