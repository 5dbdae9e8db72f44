"""How many items a namespace may hold (limits.max_items_per_namespace; 0: any number),
checked before a write adds items to it."""

from __future__ import annotations

from contextwm.domain.errors import ResourceExhausted
from contextwm.ports.namespace_store import NamespaceStore


class NamespaceRoom:
    """Reads the namespace's count from the store at each check (the store keeps it cheap),
    so servers sharing a store agree on it; writes racing each other may pass the quota by
    what they add at once."""

    def __init__(self, store: NamespaceStore, max_items: int) -> None:
        self._store = store
        self.max_items = max_items

    def left(self, namespace: str) -> int | None:
        """How many more items namespace may take; None: any number."""
        if not self.max_items:
            return None
        return max(0, self.max_items - self._store.namespace_totals(namespace)[0])

    def check(self, namespace: str, adding: int) -> None:
        """Refuses adding `adding` items to namespace past its quota.

        Raises:
            ResourceExhausted: the namespace would hold more than max_items; the message
                says how many it holds and what to do.
        """
        if not self.max_items or adding <= 0:
            return
        held = self._store.namespace_totals(namespace)[0]
        if held + adding > self.max_items:
            raise ResourceExhausted(
                f"namespace {namespace!r} holds {held:,} items, and {adding:,} more would pass"
                f" its quota of {self.max_items:,} (setting limits.max_items_per_namespace):"
                " remove some first (retention, Forget, DeleteConversation)"
            )
