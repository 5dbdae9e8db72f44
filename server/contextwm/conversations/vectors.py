"""Vectors of a conversation's items: placed where they belong when the indexer delivers them,
the archive's index built or loaded on demand and saved when changed, and readers waiting for
what was appended before they asked."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from contextwm.conversations.activity import VectorWaiters
from contextwm.conversations.embedding_model import stale_model
from contextwm.conversations.namespace_index import NamespaceIndex
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.conversations.runtimes import Runtimes
from contextwm.domain import deadlines
from contextwm.domain.errors import NotFound
from contextwm.ports.conversation_locks import ConversationLocks
from contextwm.ports.conversation_store import ConversationStore
from contextwm.ports.history_store import HistoryStore
from contextwm.ports.namespace_store import NamespaceStore
from contextwm.ports.vector_index import VectorIndex, VectorIndexFiles
from contextwm.ports.vector_store import VectorStore
from contextwm.window.window import Vector, WindowEntry

log = logging.getLogger(__name__)

# Vectors of a saved index compared with the stored ones before it is used: a few cost a
# fraction of a millisecond, and one is enough to tell another conversation's file.
SPOT_CHECKS = 8
# How often a reader waiting for vectors looks whether another server sharing the store
# wrote them (the indexer of its own server wakes it when it does).
RECHECK_SECONDS = 0.2


class IndexStore(
    ConversationStore, ConversationLocks, VectorStore, HistoryStore, NamespaceStore, Protocol
):
    """What placing vectors and building indexes read and write: stored vectors, which
    items are reverted, the conversation's model, and the namespace's vectors; and the hold
    under which vectors are written."""


class EmbedForReader(Protocol):
    def __call__(self, rt: ConversationRuntime, texts: Sequence[str]) -> Vector | None:
        """The texts' vectors, computed with the conversation's pending items, whose vectors
        are stored and placed before it returns; None when it took none of them."""
        ...


class Vectors:
    """Thread-safe; every method takes the conversation's lock it needs."""

    def __init__(
        self,
        store: IndexStore,
        runtimes: Runtimes,
        index_files: VectorIndexFiles,
        model_name: str,
        *,
        wait_seconds: float,
    ) -> None:
        self.store = store
        self.runtimes = runtimes
        self.index_files = index_files
        self.model_name = model_name
        # Every conversation's stored vectors by namespace, for namespace-wide search.
        self.namespaces = NamespaceIndex(store, index_files.new, model_name)
        self.wait_seconds = wait_seconds
        # What the indexer paces itself by: readers waiting for vectors go first.
        self.waiters = VectorWaiters()
        # Set by the indexer: embeds a reader's texts together with the conversation's
        # pending items (see Indexer.embed_for_reader); None where no indexer runs.
        self.embed_for_reader: EmbedForReader | None = None

    def apply(self, key: int, seqs: Sequence[int], vectors: Vector) -> None:
        """Stores freshly computed vectors and puts them where they belong: on the window
        entry, or into the index for items already archived. Called by the indexer."""
        rt = self._runtime(key)
        while rt is not None and rt.unloaded:  # between the lookup and the lock: look again
            rt = self._runtime(key)
        if rt is None:
            return  # deleted meanwhile
        with rt.lock:
            if rt.deleted:
                return
            rows = [(key, s) for s in seqs]
            if rt.unloaded:
                # The store is what a reload reads: the vectors are not lost, only late in
                # the memory of a runtime loaded before they were stored.
                with self.store.hold(key):
                    stored = self.store.put_vectors(self.model_name, rows, vectors)
                seqs, vectors = _kept(key, seqs, vectors, stored)
                self.stored(rt, seqs, vectors)
                return
            try:
                with self.runtimes.held(rt):
                    stored = self.store.put_vectors(self.model_name, rows, vectors)
                    # Items erased (or deleted) since they were read for embedding: their
                    # vectors go nowhere, in memory or in any index.
                    seqs, vectors = _kept(key, seqs, vectors, stored)
                    outside = [s for s in seqs if rt.window.get(s) is None]
                    # Outside the window means archived or compacted, unless reverted.
                    reverted = (
                        self.store.reverted_among(rt.key, outside) if rt.has_reverted else set()
                    )
            except NotFound:
                return  # deleted by another server sharing the store
            self.stored(rt, seqs, vectors)
            archived_ids: list[int] = []
            archived_vecs: list[Vector] = []
            for seq, vec in zip(seqs, vectors, strict=True):
                entry = rt.window.get(seq)
                if entry is not None:
                    entry.vector = vec
                elif seq not in reverted:
                    archived_ids.append(seq)
                    archived_vecs.append(vec)
            if archived_ids and rt.index is not None:
                rt.index.add(archived_ids, np.stack(archived_vecs))
                rt.index_dirty = True
            # Only what was stored was counted pending: a reload after an erasure recounted.
            rt.pending = max(0, rt.pending - len(seqs))
            if rt.pending == 0:
                rt.indexed.notify_all()

    def stored(self, rt: ConversationRuntime, seqs: Sequence[int], vectors: Vector) -> None:
        """Vectors of rt's items were committed to the store: the namespace's index learns
        them (every writer of vectors calls this after its commit)."""
        self.namespaces.added(rt.record.namespace, rt.key, seqs, vectors)

    def _runtime(self, key: int) -> ConversationRuntime | None:
        """The conversation's runtime, loaded if need be; None once it is deleted."""
        rt = self.runtimes.by_key(key)
        if rt is not None:
            return rt
        record = self.store.conversation_record(key)
        if record is None:
            return None
        try:
            return self.runtimes.get(record.namespace, record.conversation_id)
        except NotFound:
            return None

    def wait_indexed(self, rt: ConversationRuntime) -> None:
        """Read-your-writes for dense search: waits (bounded by wait_seconds) until the items
        appended so far are embedded, by this server or by another sharing the store.

        Raises:
            DeadlineExceeded: the caller's deadline passed first.
        """
        if rt.pending == 0 or stale_model(rt, self.model_name) is not None:
            return  # (a stale conversation's items wait for a re-embed, not the indexer)
        deadline = time.monotonic() + self.wait_seconds
        with self.waiters.waiting(rt.key), rt.indexed:
            while rt.pending > 0 and not rt.deleted:
                left = deadline - time.monotonic()
                caller_left = deadlines.remaining()
                if caller_left is not None and caller_left < left:
                    if caller_left <= 0:
                        deadlines.check(f"waiting for the embedder ({rt.pending} items pending)")
                    left = caller_left
                if left <= 0:
                    return
                if rt.indexed.wait(min(left, RECHECK_SECONDS)):
                    continue
                try:
                    # Another server's vectors move the conversation's version: the reload
                    # counts them, and what is pending still.
                    self.runtimes.current(rt)
                except NotFound:
                    return

    def ensure_index(self, rt: ConversationRuntime) -> None:
        """Makes rt.index hold exactly the archived and compacted embedded items (caller
        holds rt.lock).

        A saved file is used only when it holds what the store says; a missing, stale or
        corrupt file is rebuilt from the stored vectors, which are the truth.
        """
        if rt.index is not None:
            return
        expected = self.store.archived_ids(rt.key, self.model_name)
        index = self.index_files.load(rt.key)
        if index is not None and self._holds(rt.key, index, expected):
            rt.index = index
            return
        if index is not None:
            log.warning(
                "index of conversation %s is stale; rebuilding it from stored vectors", rt.key
            )
        index = self.index_files.new()
        seqs, vectors = self.store.archived_vectors(rt.key, self.model_name)
        index.add(seqs.tolist(), vectors)
        rt.index = index
        rt.index_dirty = True

    def _holds(self, key: int, index: VectorIndex, expected: npt.NDArray[np.int64]) -> bool:
        """Whether a saved index holds the expected ids and, for a sample of them, the stored
        vectors: the file of another conversation with as many items has the right ids
        (they are seqs) and the wrong vectors."""
        if not np.array_equal(np.sort(index.ids()), expected):
            return False
        if len(expected) == 0:
            return True
        picks = np.linspace(0, len(expected) - 1, num=min(len(expected), SPOT_CHECKS))
        sample = [int(s) for s in expected[picks.astype(np.int64)]]
        stored = self.store.vectors_for(key, sample, self.model_name)
        if len(stored) != len(sample):
            return False
        saved = index.vectors(sample)
        return bool(np.allclose(saved, np.stack([stored[s] for s in sample]), atol=1e-6))

    def archive(self, rt: ConversationRuntime, seqs: Sequence[int]) -> None:
        """Moves committed evictions out of the window and into the index (rt.lock held).
        Items whose vector has not arrived yet are indexed by the indexer when it does."""
        self.index_entries(rt, self.take_out(rt, seqs))

    @staticmethod
    def take_out(rt: ConversationRuntime, seqs: Sequence[int]) -> list[WindowEntry]:
        """Removes evicted items from the window and counts them archived (rt.lock held);
        returns their entries for `index_entries` once the eviction is committed."""
        rt.archived += len(seqs)
        return [rt.window.remove(seq) for seq in seqs]

    @staticmethod
    def index_entries(rt: ConversationRuntime, entries: Sequence[WindowEntry]) -> None:
        """Adds the vectors of entries taken out of the window to a loaded index (rt.lock
        held); one not loaded is built from the stored vectors when it is."""
        embedded = [(e.item.seq, e.vector) for e in entries if e.vector is not None]
        if embedded and rt.index is not None:
            rt.index.add([s for s, _ in embedded], np.stack([v for _, v in embedded]))
            rt.index_dirty = True

    def erased_elsewhere(self, key: int) -> None:
        """Items of the conversation, or all of it, were erased, by this server or another
        sharing the store: what this server holds of their vectors goes. Its index file is
        deleted (a later use rebuilds it from the store), its runtime reloaded if out of date
        (forgotten if the conversation is gone), and its namespace's index reads the
        conversation's vectors again (or drops them). The server that erased has done all
        of that already, and its runtime is current: nothing happens then. Called on the
        store's feed thread."""
        rt = self.runtimes.by_key(key)
        namespace: str | None = None
        gone = False
        if rt is not None:
            with rt.lock:
                if rt.deleted:
                    return  # deleted here: its file and ids went with it
                version = self.store.version(key)
                if version == rt.version and rt.index is not None:
                    if rt.index_dirty:
                        self.index_files.save(rt.key, rt.index.snapshot())
                        rt.index_dirty = False
                    return
                namespace = rt.record.namespace
                if version is None:
                    gone = rt.deleted = True
                    rt.index = None
                    self.runtimes.forget(rt)
                    rt.indexed.notify_all()
                else:
                    self.runtimes.reload(rt)  # drops the index in memory
        else:
            record = self.store.conversation_record(key)
            # A conversation gone and never loaded here: the namespace index drops it at its
            # next catch-up, which finds it missing from the store's marks.
            namespace = record.namespace if record is not None else None
        self.index_files.delete(key)
        if namespace is not None:
            if gone:
                self.namespaces.dropped(namespace, key)
            else:
                self.namespaces.reread(namespace, key)

    def save_indexes(self, rested: float = 0.0) -> int:
        """Writes changed index files; returns how many were written.

        Args:
            rested: skip indexes searched less than this many seconds ago. Serialising a
                100k-item index holds its conversation's lock for tens of milliseconds, which
                a periodic save should not add to a busy conversation's latency.
        """
        written = 0
        for rt in self.runtimes.loaded():
            with rt.lock:
                if rt.index is None or not rt.index_dirty or rt.deleted:
                    continue
                if time.monotonic() - rt.last_search < rested:
                    continue
                # Serialise under the lock (tens of ms at 100k items), write without it.
                snapshot = rt.index.snapshot()
                rt.index_dirty = False
            self.index_files.save(rt.key, snapshot)
            written += 1
        return written


def _kept(
    key: int, seqs: Sequence[int], vectors: Vector, stored: set[tuple[int, int]]
) -> tuple[Sequence[int], Vector]:
    """The seqs (and their vectors) of the rows the store kept."""
    if len(stored) == len(seqs):
        return seqs, vectors
    keep = [n for n, s in enumerate(seqs) if (key, s) in stored]
    return [seqs[n] for n in keep], vectors[keep]
