"""Tests for contextwm.conversations.namespace_index: the in-memory index of a namespace's
vectors against an exact scan of what was stored, through builds, additions made while a
build reads the store, removals and deleted conversations."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from contextwm.adapters.faiss_index import FaissIndex
from contextwm.conversations.namespace_index import NamespaceIndex
from contextwm.ports.namespace_store import ItemKey, NamespaceVectors

DIM = 8


def unit(rng: np.random.Generator, n: int) -> npt.NDArray[np.float32]:
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    return np.asarray(v / np.linalg.norm(v, axis=1, keepdims=True), dtype=np.float32)


class FakeStore:
    """The stored vectors of one namespace; `during_read` runs while a build reads them."""

    def __init__(self) -> None:
        self.vectors: dict[ItemKey, npt.NDArray[np.float32]] = {}
        self.during_read: Callable[[], None] | None = None
        self.reads = 0

    def vector_marks(self, namespace: str) -> dict[int, int]:
        return {}  # a store one server uses: its writers tell the index (see store_vectors)

    def namespace_vectors(self, namespace: str, model: str) -> NamespaceVectors:
        self.reads += 1
        items = sorted(self.vectors) if namespace == "ns" else []
        snapshot = [self.vectors[i] for i in items]
        if self.during_read is not None:
            self.during_read()
        return NamespaceVectors(
            np.array([k for k, _ in items], dtype=np.int64),
            np.array([s for _, s in items], dtype=np.int64),
            np.stack(snapshot) if snapshot else np.zeros((0, DIM), dtype=np.float32),
        )


def make() -> tuple[FakeStore, NamespaceIndex]:
    store = FakeStore()
    return store, NamespaceIndex(store, lambda: FaissIndex(DIM), "m")  # type: ignore[arg-type]


def store_vectors(
    store: FakeStore, index: NamespaceIndex, key: int, seqs: list[int], v: npt.NDArray[np.float32]
) -> None:
    """What a writer does: commit, then tell the index."""
    for seq, vec in zip(seqs, v, strict=True):
        store.vectors[(key, seq)] = vec
    index.added("ns", key, seqs, v)


def exact(store: FakeStore, query: npt.NDArray[np.float32], k: int) -> list[ItemKey]:
    sims = {i: float(v @ query) for i, v in store.vectors.items()}
    return sorted(sims, key=lambda i: (-sims[i], i))[:k]


def test_nearest_matches_a_scan_of_the_store_through_every_change() -> None:
    rng = np.random.default_rng(1)
    store, index = make()
    store_vectors(store, index, 1, [1, 2, 3], unit(rng, 3))  # before any build: read by it
    query = unit(rng, 1)[0]
    assert [i for i, _ in index.nearest("ns", query, 10)] == exact(store, query, 10)
    store_vectors(store, index, 2, [1, 2], unit(rng, 2))  # after: added by its writer
    store_vectors(store, index, 1, [4], unit(rng, 1))
    assert [i for i, _ in index.nearest("ns", query, 10)] == exact(store, query, 10)
    del store.vectors[(1, 2)]
    index.removed("ns", 1, [2])
    for seq in (1, 2):
        del store.vectors[(2, seq)]
    index.dropped("ns", 2)
    assert [i for i, _ in index.nearest("ns", query, 10)] == exact(store, query, 10)
    assert store.reads == 1


def test_vectors_stored_while_a_build_reads_are_not_lost() -> None:
    rng = np.random.default_rng(2)
    store, index = make()
    store_vectors(store, index, 1, [1], unit(rng, 1))
    late = unit(rng, 1)
    store.during_read = lambda: store_vectors(store, index, 1, [2], late)
    query = late[0]
    found = index.nearest("ns", query, 5)
    assert found[0] == ((1, 2), found[0][1])
    assert len(found) == 2  # no copy of the item in the answer


def test_allowed_and_missing_vectors() -> None:
    rng = np.random.default_rng(3)
    store, index = make()
    store_vectors(store, index, 1, [1, 2, 3], unit(rng, 3))
    query = store.vectors[(1, 3)]
    assert [i for i, _ in index.nearest("ns", query, 5, allowed=[(1, 1), (1, 2)])] == [
        i for i in exact(store, query, 5) if i != (1, 3)
    ]
    got = index.vectors("ns", [(1, 2), (1, 9)])
    assert list(got) == [(1, 2)]
    assert np.allclose(got[(1, 2)], store.vectors[(1, 2)])
    assert index.nearest("other", query, 5) == []
