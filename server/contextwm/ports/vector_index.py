"""The VectorIndex port: inner-product search over one conversation's archived vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from contextwm.ports.embedder import Vectors


class VectorIndex(Protocol):
    """Ids are item seqs. Not thread-safe: callers hold the conversation's lock."""

    @property
    def size(self) -> int: ...

    def add(self, ids: Sequence[int], vectors: Vectors) -> None: ...

    def remove(self, ids: Sequence[int]) -> int:
        """Removes these ids (those not held are ignored); returns how many entries went."""
        ...

    def search(
        self, query: npt.NDArray[np.float32], k: int, allowed: npt.NDArray[np.int64] | None = None
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """Top k by inner product among allowed ids (all when None): (scores, ids), best first."""
        ...

    def ids(self) -> npt.NDArray[np.int64]:
        """Every id in the index."""
        ...

    def vectors(self, ids: Sequence[int]) -> Vectors:
        """The vectors of these ids, in order; ValueError for an id not in the index."""
        ...

    def snapshot(self) -> bytes:
        """The index serialised, for VectorIndexFiles.save."""
        ...


class VectorIndexFiles(Protocol):
    """Where each conversation's index lives between runs; the store stays the truth."""

    def new(self) -> VectorIndex: ...

    def load(self, key: int) -> VectorIndex | None:
        """The saved index, or None when missing or unreadable."""
        ...

    def save(self, key: int, snapshot: bytes) -> None:
        """Writes a snapshot atomically (callers take it under their lock, write outside)."""
        ...

    def delete(self, key: int) -> None: ...

    def sizes(self) -> dict[int, int]:
        """Bytes on disk of each saved index, by conversation key."""
        ...
