"""One in-memory vector index per namespace over the stored vectors of all its items, for
namespace-wide search: a cache, built from the store on first use and told of every vector
stored or dropped since, never the truth (search checks what it finds against the store).
Servers sharing a store also catch up, before each search, on what the others wrote."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from contextwm.ports.embedder import Vectors
from contextwm.ports.namespace_store import ItemKey, NamespaceStore
from contextwm.ports.vector_index import VectorIndex

# An item's id in the index: its conversation key in the high half, its seq in the low one.
# Seqs are never reused within a conversation (removed items leave gaps), so an id names one
# item for as long as its conversation lives; a deleted conversation's ids are dropped, since
# SQLite may give its key to the next conversation created.
_SEQ_BITS = 32
_SEQ_MASK = (1 << _SEQ_BITS) - 1

# A change returns how many ids it removed.
_Change = Callable[[VectorIndex], int]


def pack(key: int, seqs: Sequence[int] | npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Index ids of one conversation's items."""
    return (np.int64(key) << _SEQ_BITS) | np.asarray(seqs, dtype=np.int64)


def unpack(ids: npt.NDArray[np.int64]) -> list[ItemKey]:
    """(conversation key, seq) of index ids."""
    return list(zip((ids >> _SEQ_BITS).tolist(), (ids & _SEQ_MASK).tolist(), strict=True))


class NamespaceIndex:
    """A NearestVectors over in-memory indexes; thread-safe.

    It holds every item of the namespace that has a vector of the server's model, whatever its
    state, and may hold items removed since (retention drops them, a search ignores them): the
    store says which are searched. Writers of vectors call `added` after their commit, and the
    deletion of items or conversations calls `removed` or `dropped`; a namespace being built
    queues those calls and applies them once its index is read, so none falls between.
    """

    def __init__(self, store: NamespaceStore, new_index: Callable[[], VectorIndex], model: str):
        self._store = store
        self._new_index = new_index
        self._model = model
        # Guards the maps and every index (an index is not thread-safe); held for a search.
        self._lock = threading.Lock()
        self._built: dict[str, VectorIndex] = {}
        self._queued: dict[str, list[_Change]] = {}  # namespaces being built
        # Per built namespace, the store's vector marks (vector_marks) it has caught up to.
        self._marks: dict[str, dict[int, int]] = {}
        # One build at a time: a build reads a whole namespace, and two would double the peak.
        self._build_lock = threading.Lock()

    # ---- kept current

    def added(self, namespace: str, key: int, seqs: Sequence[int], vectors: Vectors) -> None:
        """Vectors of these items were stored (called after the commit)."""
        if len(seqs) == 0:
            return
        ids = pack(key, seqs)
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)

        def add(index: VectorIndex) -> int:
            # An item a build read and then queued too is held twice: search drops the copy.
            index.add(ids.tolist(), matrix)
            return 0

        self._change(namespace, add)

    def removed(self, namespace: str, key: int, seqs: Sequence[int]) -> int:
        """These items were deleted from the store (or their vectors were). Returns how many
        ids the index held (0 when it is not built yet)."""
        if len(seqs) == 0:
            return 0
        ids = pack(key, seqs).tolist()
        return self._change(namespace, lambda index: index.remove(ids))

    def dropped(self, namespace: str, key: int) -> int:
        """The conversation was deleted with all its items. Returns how many ids the index
        held of it (0 when it is not built yet)."""

        def drop(index: VectorIndex) -> int:
            ids = index.ids()
            return index.remove(ids[(ids >> _SEQ_BITS) == key].tolist())

        return self._change(namespace, drop)

    def reread(self, namespace: str, key: int) -> None:
        """Items of the conversation were erased, perhaps by another server sharing the store,
        which tells no one which: its ids are dropped and its stored vectors read again (a
        namespace not built yet reads the store when it is)."""
        with self._lock:
            if namespace not in self._built and namespace not in self._queued:
                return
        found = self._store.vectors_since(namespace, self._model, {key: 0})
        ids = (np.int64(key) << _SEQ_BITS) | found.seqs

        def redo(index: VectorIndex) -> int:
            held = index.ids()
            gone = index.remove(held[(held >> _SEQ_BITS) == key].tolist())
            index.add(ids.tolist(), found.vectors)
            return gone

        self._change(namespace, redo)

    def _change(self, namespace: str, change: _Change) -> int:
        """Applies a change to the built index (returning what it returns), or queues it for
        the build under way (0)."""
        with self._lock:
            index = self._built.get(namespace)
            if index is not None:
                return change(index)
            if namespace in self._queued:
                self._queued[namespace].append(change)
            # Neither: the build, when it comes, reads the store as it is then.
            return 0

    # ---- NearestVectors

    def nearest(
        self,
        namespace: str,
        query: npt.NDArray[np.float32],
        k: int,
        allowed: Sequence[ItemKey] | None = None,
    ) -> list[tuple[ItemKey, float]]:
        index = self._index(namespace)
        allowed_ids = None
        if allowed is not None:
            allowed_ids = np.fromiter(
                ((key << _SEQ_BITS) | seq for key, seq in allowed), dtype=np.int64
            )
        with self._lock:
            sims, ids = index.search(query, k, allowed_ids)
        out: list[tuple[ItemKey, float]] = []
        seen: set[ItemKey] = set()
        for item, sim in zip(unpack(ids), sims.tolist(), strict=True):
            if item not in seen:
                seen.add(item)
                out.append((item, sim))
        return out

    def vectors(
        self, namespace: str, items: Sequence[ItemKey]
    ) -> dict[ItemKey, npt.NDArray[np.float32]]:
        index = self._index(namespace)
        out: dict[ItemKey, npt.NDArray[np.float32]] = {}
        with self._lock:
            for key, seq in items:
                try:
                    out[(key, seq)] = index.vectors([(key << _SEQ_BITS) | seq])[0]
                except ValueError:
                    continue  # no vector (yet): the item ranks by its words alone
        return out

    def _index(self, namespace: str) -> VectorIndex:
        """The namespace's index, read from the store if it is not built yet, and current
        with what other servers sharing the store wrote."""
        with self._lock:
            index = self._built.get(namespace)
        if index is not None:
            self._catch_up(namespace, index)
            return index
        with self._build_lock:
            with self._lock:
                index = self._built.get(namespace)
                if index is not None:
                    return index
                self._queued[namespace] = []
            try:
                # The marks first: what is written between the two reads comes again at the
                # next catch-up.
                marks = self._store.vector_marks(namespace)
                # Read after queueing starts: a vector committed meanwhile is either read
                # here or queued by its writer (or both, which search tolerates).
                stored = self._store.namespace_vectors(namespace, self._model)
                index = self._new_index()
                index.add(((stored.keys << _SEQ_BITS) | stored.seqs).tolist(), stored.vectors)
            except BaseException:
                with self._lock:
                    del self._queued[namespace]
                raise
            with self._lock:
                for change in self._queued.pop(namespace):
                    change(index)
                self._built[namespace] = index
                self._marks[namespace] = marks
            return index

    def _catch_up(self, namespace: str, index: VectorIndex) -> None:
        """Adds what servers sharing the store wrote since the marks (this one's writes come
        again, and replace their copies), and drops conversations deleted meanwhile."""
        marks = self._store.vector_marks(namespace)
        with self._lock:
            known = self._marks.get(namespace, {})
        if marks == known:
            return  # always, from a store one server uses
        moved = {key: known.get(key, 0) for key, mark in marks.items() if mark > known.get(key, 0)}
        found = self._store.vectors_since(namespace, self._model, moved)
        ids = ((found.keys << _SEQ_BITS) | found.seqs).tolist()
        gone = [key for key in known if key not in marks]
        with self._lock:
            if ids:
                index.remove(ids)
                index.add(ids, found.vectors)
            if gone:
                held = index.ids()
                index.remove(held[np.isin(held >> _SEQ_BITS, gone)].tolist())
            self._marks[namespace] = marks
