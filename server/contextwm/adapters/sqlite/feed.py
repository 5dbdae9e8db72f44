"""One server per SQLite file (the data directory's lock): no other server commits events
that this one's watchers would have to hear of."""

from __future__ import annotations

from collections.abc import Callable

from contextwm.adapters.sqlite.database import Database
from contextwm.ports.event_feed import EventFeed


class NoEventFeed(Database, EventFeed):
    """Announces nothing: the server publishes its own events as it commits them."""

    def follow_events(
        self, committed: Callable[[int, int], None], missed: Callable[[], None]
    ) -> None:
        return None

    def follow_erasures(self, erased: Callable[[int], None]) -> None:
        return None  # this server erased it, and dropped its copies as it did
