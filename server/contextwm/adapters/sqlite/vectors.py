"""Item vectors as float32 blobs: pending ones for the indexer, stored ones for the index."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from contextwm.adapters.sqlite.database import Database
from contextwm.domain.items import ItemState
from contextwm.ports.embedder import Vectors
from contextwm.ports.vector_store import PendingVector, VectorStore


class VectorTables(Database, VectorStore):
    """Item vectors as float32 blobs: pending ones for the indexer, stored ones for the index."""

    def pending_vectors(self, model: str, limit: int, after_id: int = 0) -> list[PendingVector]:
        return pending_rows(self._reader(), model, "i.id > ?", "i.id", after_id, limit)

    def pending_vectors_of(self, model: str, key: int, limit: int) -> list[PendingVector]:
        # Newest first along the (conv, seq) index: what readers wait for is the newest.
        return pending_rows(self._reader(), model, "i.conv = ?", "i.seq DESC", key, limit)

    def put_vectors(
        self, model: str, rows: Sequence[tuple[int, int]], vectors: Vectors
    ) -> set[tuple[int, int]]:
        with self._transaction() as db:
            return write_vectors(db, model, rows, vectors)

    def archived_vectors(self, key: int, model: str) -> tuple[npt.NDArray[np.int64], Vectors]:
        return archived_vectors(self._reader(), key, model)

    def vectors_for(
        self, key: int, seqs: Sequence[int], model: str
    ) -> dict[int, npt.NDArray[np.float32]]:
        """Stored vectors of these items (items without one are left out)."""
        out, missing = self._memo.vectors(key, model, seqs)
        if missing:
            generation = self._memo.generation
            read = self._read_vectors(key, missing, model)
            self._memo.keep(key, generation, vectors=(model, read))
            out.update(read)
        return out

    def _read_vectors(
        self, key: int, seqs: Sequence[int], model: str
    ) -> dict[int, npt.NDArray[np.float32]]:
        out: dict[int, npt.NDArray[np.float32]] = {}
        db = self._reader()
        for start in range(0, len(seqs), 500):
            chunk = [int(s) for s in seqs[start : start + 500]]
            rows = db.execute(
                "SELECT i.seq, v.vec FROM items i JOIN vectors v ON v.item = i.id"
                f" WHERE i.conv = ? AND v.model = ? AND i.seq IN ({','.join('?' * len(chunk))})",
                (key, model, *chunk),
            ).fetchall()
            for seq, blob in rows:
                out[seq] = np.frombuffer(blob, dtype=np.float32)
        return out

    def archived_ids(self, key: int, model: str) -> npt.NDArray[np.int64]:
        """Seqs of archived (or compacted) items that have a vector: what the conversation's
        index must hold."""
        return archived_ids(self._reader(), key, model)


# Module functions on any connection: `contextwm check` asks the same of a read-only one.


def pending_rows(
    db: sqlite3.Connection, model: str, where: str, order: str, value: int, limit: int
) -> list[PendingVector]:
    """Items without a vector for model that meet `where` (one ? for value), in `order`.
    Items of conversations whose vectors come from another model are left out: they
    wait for a re-embed (NOT EXISTS keeps items the outer loop, in the order asked)."""
    rows = db.execute(
        "SELECT i.id, i.conv, i.seq, i.content FROM items i"
        " LEFT JOIN vectors v ON v.item = i.id AND v.model = ?"
        f" WHERE v.item IS NULL AND {where} AND NOT EXISTS (SELECT 1 FROM conversations c"
        f" WHERE c.id = i.conv AND c.embed_model != ?) ORDER BY {order} LIMIT ?",
        (model, value, model, limit),
    ).fetchall()
    return [PendingVector(r[0], r[1], r[2], r[3]) for r in rows]


def write_vectors(
    db: sqlite3.Connection,
    model: str,
    rows: Sequence[tuple[int, int]],
    vectors: Sequence[npt.NDArray[np.float32]] | Vectors,
) -> set[tuple[int, int]]:
    """Stores one vector per (conversation key, seq); rows of deleted items are skipped.
    Returns the rows stored."""
    stored: set[tuple[int, int]] = set()
    wanted: dict[int, list[int]] = {}
    for key, seq in rows:
        wanted.setdefault(key, []).append(int(seq))
    for key, seqs in wanted.items():
        for start in range(0, len(seqs), 500):
            chunk = seqs[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found = db.execute(
                f"SELECT seq FROM items WHERE conv = ? AND seq IN ({marks})", (key, *chunk)
            )
            stored.update((key, seq) for (seq,) in found)
    db.executemany(
        "INSERT OR REPLACE INTO vectors (item, model, vec)"
        " SELECT id, ?, ? FROM items WHERE conv = ? AND seq = ?",
        [
            (model, np.ascontiguousarray(vec, dtype=np.float32).tobytes(), key, seq)
            for (key, seq), vec in zip(rows, vectors, strict=True)
        ],
    )
    # A conversation's first vectors name its model. Vectors written into one whose vectors
    # come from another model (a re-embed under way) leave it as it is: finish_reembed marks
    # it once every item has one.
    db.executemany(
        "UPDATE conversations SET embed_model = ? WHERE id = ? AND embed_model IS NULL",
        [(model, key) for key in sorted({key for key, _ in rows})],
    )
    return stored


def archived_vectors(
    db: sqlite3.Connection, key: int, model: str
) -> tuple[npt.NDArray[np.int64], Vectors]:
    """The archived (or compacted) items' seqs and stored vectors, in seq order."""
    joined = (
        " FROM items i JOIN vectors v ON v.item = i.id"
        " WHERE i.conv = ? AND i.state IN (?, ?) AND v.model = ?"
    )
    params = (key, int(ItemState.ARCHIVED), int(ItemState.COMPACTED), model)
    count, width = db.execute(f"SELECT count(*), max(length(v.vec)){joined}", params).fetchone()
    seqs = np.zeros(count, dtype=np.int64)
    matrix = np.zeros((count, (width or 0) // 4), dtype=np.float32)
    cursor = db.execute(f"SELECT i.seq, v.vec{joined} ORDER BY i.seq", params)
    # Filled in chunks: holding every row, then joining them, tripled the peak memory.
    row = 0
    while chunk := cursor.fetchmany(4096):
        for seq, blob in chunk:
            if row == count:  # rows committed since the count: the next load sees them
                break
            seqs[row] = seq
            matrix[row] = np.frombuffer(blob, dtype=np.float32)
            row += 1
    return seqs[:row], matrix[:row]


def archived_ids(db: sqlite3.Connection, key: int, model: str) -> npt.NDArray[np.int64]:
    """Seqs of archived (or compacted) items that have a vector, in order."""
    rows = db.execute(
        "SELECT i.seq FROM items i JOIN vectors v ON v.item = i.id"
        " WHERE i.conv = ? AND i.state IN (?, ?) AND v.model = ? ORDER BY i.seq",
        (key, int(ItemState.ARCHIVED), int(ItemState.COMPACTED), model),
    ).fetchall()
    return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
