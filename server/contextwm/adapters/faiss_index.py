"""Exact inner-product search with FAISS (IndexIDMap2 over IndexFlatIP), saved atomically
with a checksum."""

from __future__ import annotations

import logging
import os
import struct
import zlib
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

# Written after FAISS's own bytes, which faiss.read_index never reads: a magic word, their
# length and their CRC-32. FAISS checks a file's structure but not the vectors in it: random
# bytes in the middle of a file load as an index with the right ids and wrong vectors.
_TRAILER = struct.Struct("<8sQI")
_MAGIC = b"cwm-crc1"
_CHUNK = 1 << 20


class IndexFileError(ValueError):
    """An index file that cannot be used; `reason` says why, without the path."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"index file {path} {reason}")
        self.path = path
        self.reason = reason


class FaissIndex:
    """A VectorIndex; ids are item seqs, vectors are unit length so inner product is cosine."""

    def __init__(self, dimension: int, index: Any = None) -> None:
        self._dim = dimension
        self._index = (
            index if index is not None else faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))
        )

    @classmethod
    def read(cls, path: Path) -> FaissIndex:
        """Reads an index file whatever its dimension, once its checksum matches.

        Raises:
            IndexFileError: when the file is unreadable, damaged or has no checksum.
        """
        verify_checksum(path)
        try:
            index = faiss.read_index(str(path))
        except RuntimeError as exc:  # faiss reports corrupt files as RuntimeError
            raise IndexFileError(path, f"is unreadable ({exc})") from exc
        return cls(int(index.d), index)

    @classmethod
    def load(cls, path: Path, dimension: int) -> FaissIndex:
        """Reads an index file of this dimension.

        Raises:
            IndexFileError: when the file is unreadable, damaged or of another dimension.
        """
        index = cls.read(path)
        if index.dimension != dimension:
            raise IndexFileError(path, f"has dimension {index.dimension}, expected {dimension}")
        return index

    @property
    def dimension(self) -> int:
        return self._dim

    @property
    def size(self) -> int:
        return int(self._index.ntotal)

    def add(self, ids: Sequence[int], vectors: Vectors) -> None:
        if len(ids) == 0:
            return
        self._index.add_with_ids(
            np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64)
        )

    def remove(self, ids: Sequence[int]) -> int:
        if len(ids) == 0:
            return 0
        return int(self._index.remove_ids(np.asarray(ids, dtype=np.int64)))

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

    def vectors(self, ids: Sequence[int]) -> Vectors:
        """The stored vectors of these ids, in order (for consistency checks).

        Raises:
            ValueError: for an id that is not in the index.
        """
        out = np.zeros((len(ids), self._dim), dtype=np.float32)
        for row, id_ in enumerate(ids):
            try:
                out[row] = self._index.reconstruct(int(id_))
            except RuntimeError as exc:  # faiss: "key not found"
                raise ValueError(f"id {id_} is not in the index") from exc
        return out

    def snapshot(self) -> bytes:
        """The index serialised in memory, so that writing it to disk needs no lock."""
        return bytes(faiss.serialize_index(self._index))


def write_atomically(path: Path, data: bytes) -> None:
    """Writes data and its checksum trailer to a temporary file, then renames it over path."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("wb") as out:
        out.write(data)
        out.write(_TRAILER.pack(_MAGIC, len(data), zlib.crc32(data)))
    os.replace(tmp, path)


def verify_checksum(path: Path) -> None:
    """Checks an index file against its trailer, reading it in chunks (no copy in memory).

    Raises:
        IndexFileError: when the file is truncated, damaged, or has no trailer (files saved
            before checksums existed; they are rebuilt once).
    """
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < _TRAILER.size:
                raise IndexFileError(path, f"is truncated ({size} bytes)")
            f.seek(size - _TRAILER.size)
            magic, length, crc = _TRAILER.unpack(f.read(_TRAILER.size))
            if magic != _MAGIC:
                raise IndexFileError(path, "has no checksum (truncated, or older)")
            if length != size - _TRAILER.size:
                raise IndexFileError(path, "has a damaged length")
            f.seek(0)
            actual = 0
            left = length
            while left > 0:
                chunk = f.read(min(_CHUNK, left))
                if not chunk:
                    break
                actual = zlib.crc32(chunk, actual)
                left -= len(chunk)
    except OSError as exc:
        raise IndexFileError(path, f"is unreadable ({exc})") from exc
    if actual != crc:
        raise IndexFileError(path, "is damaged (checksum mismatch)")


class FaissIndexFiles:
    """VectorIndexFiles in a directory: one `<conversation key>.faiss` file each."""

    def __init__(self, directory: Path, dimension: int, *, create: bool = True) -> None:
        """create=False leaves a missing directory alone (another model's, whose files are
        only deleted)."""
        if create:
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
        # The directory may have been deleted while the server ran: the store is the truth,
        # so its index files can go at any time and come back at the next save.
        self._dir.mkdir(parents=True, exist_ok=True)
        write_atomically(self._path(key), snapshot)

    def delete(self, key: int) -> None:
        self._path(key).unlink(missing_ok=True)

    def sizes(self) -> dict[int, int]:
        # One directory listing, not a stat per conversation: a scope can hold thousands.
        found: dict[int, int] = {}
        try:
            entries = list(os.scandir(self._dir))
        except FileNotFoundError:  # deleted while the server runs: back at the next save
            return found
        for entry in entries:
            stem, dot, suffix = entry.name.partition(".")
            if dot and suffix == "faiss" and stem.isdecimal():
                try:
                    found[int(stem)] = entry.stat().st_size
                except FileNotFoundError:  # deleted since the listing
                    continue
        return found
