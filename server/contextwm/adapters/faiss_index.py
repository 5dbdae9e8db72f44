"""Exact inner-product search with FAISS (IndexIDMap2 over IndexFlatIP), saved atomically."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import faiss as _faiss
import numpy as np
import numpy.typing as npt

from contextwm.ports.embedder import Vectors

log = logging.getLogger(__name__)
# faiss ships partial annotations that disagree with its SWIG signatures.
faiss: Any = _faiss


class FaissIndex:
    """A VectorIndex; ids are item seqs, vectors are unit length so inner product is cosine."""

    def __init__(self, dimension: int, index: Any = None) -> None:
        self._dim = dimension
        self._index = (
            index if index is not None else faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))
        )

    @classmethod
    def load(cls, path: Path, dimension: int) -> FaissIndex:
        """Reads an index file.

        Raises:
            ValueError: when the file is unreadable or of another dimension.
        """
        try:
            index = faiss.read_index(str(path))
        except RuntimeError as exc:  # faiss reports corrupt files as RuntimeError
            raise ValueError(f"unreadable index file {path}: {exc}") from exc
        if index.d != dimension:
            raise ValueError(f"index file {path} has dimension {index.d}, expected {dimension}")
        return cls(dimension, index)

    @property
    def size(self) -> int:
        return int(self._index.ntotal)

    def add(self, ids: Sequence[int], vectors: Vectors) -> None:
        if len(ids) == 0:
            return
        self._index.add_with_ids(
            np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64)
        )

    def remove(self, ids: Sequence[int]) -> None:
        if len(ids) == 0:
            return
        self._index.remove_ids(np.asarray(ids, dtype=np.int64))

    def search(
        self, query: npt.NDArray[np.float32], k: int, allowed: npt.NDArray[np.int64] | None = None
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        if self.size == 0 or k <= 0 or (allowed is not None and len(allowed) == 0):
            return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
        # One OpenMP thread per search, set on the calling thread (the setting is per thread):
        # for one query vector the split costs more than it gains (58 ms against 10 ms at
        # 100k vectors, measured from a gRPC worker thread).
        faiss.omp_set_num_threads(1)
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        if allowed is None:
            scores, ids = self._index.search(q, min(k, self.size))
        else:
            # IndexIDMap2 translates the selector from our ids to its internal positions.
            selector = faiss.IDSelectorBatch(np.ascontiguousarray(allowed, dtype=np.int64))
            params = faiss.SearchParameters(sel=selector)
            scores, ids = self._index.search(q, min(k, len(allowed), self.size), params=params)
        keep = ids[0] >= 0
        return scores[0][keep], ids[0][keep]

    def ids(self) -> npt.NDArray[np.int64]:
        """Every id in the index (for consistency checks)."""
        ids: npt.NDArray[np.int64] = faiss.vector_to_array(self._index.id_map).astype(np.int64)
        return ids

    def snapshot(self) -> bytes:
        """The index serialised in memory, so that writing it to disk needs no lock."""
        return bytes(faiss.serialize_index(self._index))


def write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class FaissIndexFiles:
    """VectorIndexFiles in a directory: one `<conversation key>.faiss` file each."""

    def __init__(self, directory: Path, dimension: int) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._dir = directory
        self._dim = dimension

    def _path(self, key: int) -> Path:
        return self._dir / f"{key}.faiss"

    def new(self) -> FaissIndex:
        return FaissIndex(self._dim)

    def load(self, key: int) -> FaissIndex | None:
        path = self._path(key)
        if not path.exists():
            return None
        try:
            return FaissIndex.load(path, self._dim)
        except ValueError as exc:
            log.warning("%s; rebuilding it from stored vectors", exc)
            return None

    def save(self, key: int, snapshot: bytes) -> None:
        write_atomically(self._path(key), snapshot)

    def delete(self, key: int) -> None:
        self._path(key).unlink(missing_ok=True)
