"""News that events were committed, from every server that shares the store: what lets a
server's watchers follow a conversation that another server changes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class EventFeed(Protocol):
    """A store several servers share tells each of them about the others' events; a store
    only one server uses has nothing to tell (that server publishes its own events)."""

    def follow_events(
        self, committed: Callable[[int, int], None], missed: Callable[[], None]
    ) -> None:
        """Until the store closes, calls committed(key, last) on a thread of the store's when
        events of conversation `key` up to number `last` were committed (by any server sharing
        the store, this one included), and missed() when news may have been lost meanwhile
        (the store's connection was lost and made again): the caller then reads what it
        follows from the store. After a callback raised, missed() is called again later, until
        it returns."""
        ...

    def follow_erasures(self, erased: Callable[[int], None]) -> None:
        """Until the store closes, calls erased(key) on a thread of the store's when items of
        conversation `key` were erased, or the conversation deleted (by any server sharing the
        store, this one included):
        the caller drops what its memory and index files hold of them. Erasures announced
        while the store's connection was down are not repeated (docs/security.md)."""
        ...
