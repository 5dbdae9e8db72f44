"""The stored vectors of items: those still to embed, and those written for one model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from contextwm.ports.embedder import Vectors


@dataclass(frozen=True, slots=True)
class PendingVector:
    """An item that has no vector for the current model yet."""

    item_id: int
    conversation_key: int
    seq: int
    text: str


class VectorStore(Protocol):
    """Vectors by (conversation key, seq) and model; durable once a call returns."""

    def pending_vectors(self, model: str, limit: int, after_id: int = 0) -> list[PendingVector]:
        """Items without a vector for model, in id order, with ids above after_id."""
        ...

    def pending_vectors_of(self, model: str, key: int, limit: int) -> list[PendingVector]:
        """One conversation's items without a vector for model, newest first."""
        ...

    def put_vectors(
        self, model: str, rows: Sequence[tuple[int, int]], vectors: Vectors
    ) -> set[tuple[int, int]]:
        """Stores one vector per (conversation key, seq); rows of deleted items are skipped.
        Returns the rows stored: a vector computed from an item erased meanwhile must not
        reach any index."""
        ...

    def archived_vectors(self, key: int, model: str) -> tuple[npt.NDArray[np.int64], Vectors]: ...

    def vectors_for(
        self, key: int, seqs: Sequence[int], model: str
    ) -> dict[int, npt.NDArray[np.float32]]: ...

    def archived_ids(self, key: int, model: str) -> npt.NDArray[np.int64]:
        """Seqs of archived items that have a vector: what the conversation's index must hold."""
        ...
