"""Removing archived items for good: their rows, full-text rows, vectors and facts, and their
ids in the conversation's index, in one unit of work; and the tally of what retention
removed, which metrics read."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from contextwm.conversations.unit_of_work import Change
from contextwm.conversations.vectors import Vectors
from contextwm.llm_context.ledger import Ledger
from contextwm.ports.conversation_store import ConversationStore
from contextwm.ports.history_store import HistoryStore
from contextwm.ports.retention_store import ArchivedRow, RetentionStore


class RemovalCounters:
    """What retention removed since the server started, as plain counters (read them
    without a lock; they only grow). Thread-safe to add to."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.items_removed = 0
        self.conversations_removed = 0
        self.runs = 0
        self.failed_runs = 0

    def add(self, *, items: int = 0, conversations: int = 0) -> None:
        with self._changed:
            self.items_removed += items
            self.conversations_removed += conversations
            self._changed.notify_all()

    def run_ended(self, *, failed: bool = False) -> None:
        with self._changed:
            self.runs += 1
            self.failed_runs += failed
            self._changed.notify_all()

    def wait_for(self, done: Callable[[RemovalCounters], bool], timeout: float) -> bool:
        """Waits until done(self) holds (a run ended, items were removed, ...); returns
        whether it did within timeout seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: done(self), timeout)


class RemovalStore(ConversationStore, HistoryStore, RetentionStore, Protocol):
    """What a removal writes, and the clock and file copies it reads back afterwards."""


class Removals:
    """Removes a conversation's archived items; the caller holds a unit of work on it."""

    def __init__(
        self, store: RemovalStore, vectors: Vectors, on_removed: Callable[[], None]
    ) -> None:
        """Args:
        on_removed: called after a removal (the indexer rescans: SQLite hands freed ids
            out again, so later items may lie behind its cursor).
        """
        self._store = store
        self._vectors = vectors
        self._on_removed = on_removed

    def remove(self, change: Change, rows: Sequence[ArchivedRow]) -> int:
        """Removes these archived or compacted items, read under the change's lock, and
        returns how many went. Items still waiting for their vector are left: the indexer
        may be embedding them at this moment, and would index them on delivery.

        Args:
            change: the unit of work on the conversation.
            rows: the items, as store.archived_rows read them within this change.
        """
        rt = change.rt
        seqs = [r.seq for r in rows if r.embedded]
        if not seqs:
            return 0
        # Removing ids from the saved index costs less than rebuilding it once stale.
        self._vectors.ensure_index(rt)
        removed = change.commit(lambda _: self._store.remove_items(rt.key, seqs))
        rt.total -= removed.count
        rt.archived -= removed.count
        rt.tokens -= removed.tokens
        if rt.index is not None:
            rt.index.remove(seqs)
            rt.index_dirty = True
        self._vectors.namespaces.removed(rt.record.namespace, rt.key, seqs)
        rt.term_postings = {}  # BM25's postings and counts are off now
        rt.first_ts = self._store.clock_bounds(rt.key)[0]
        gone = set(seqs)
        rt.active.drop(gone)  # a conversation that never compacted shows its archive there
        for seq in gone & rt.replaced.keys():
            del rt.replaced[seq]
        if gone & set(rt.whole_copies.values()):
            rt.whole_copies = self._store.whole_file_copies(rt.key)
        rt.ledger = Ledger(self._store.facts(rt.key))  # their facts went with them
        self._on_removed()
        return removed.count
