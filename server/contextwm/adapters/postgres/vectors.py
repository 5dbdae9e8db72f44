"""Item vectors as float32 bytes: pending ones for the indexer, stored ones for the index."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import psycopg

from contextwm.adapters.postgres.codecs import text_out
from contextwm.adapters.postgres.database import Database
from contextwm.domain.items import ItemState
from contextwm.ports.embedder import Vectors
from contextwm.ports.vector_store import PendingVector, VectorStore

_ARCHIVED = [int(ItemState.ARCHIVED), int(ItemState.COMPACTED)]


def write_vectors(
    db: psycopg.Connection,
    model: str,
    rows: Sequence[tuple[int, int]],
    vectors: Sequence[npt.NDArray[np.float32]] | Vectors,
) -> set[tuple[int, int]]:
    """Stores one vector per (conversation key, seq); rows of deleted items are skipped.
    Returns the rows stored."""
    if not len(rows):
        return set()
    keys = [key for key, _ in rows]
    seqs = [seq for _, seq in rows]
    blobs = [np.ascontiguousarray(v, dtype=np.float32).tobytes() for v in vectors]
    # An item's vector ends its claim (claims.py): it is no longer pending.
    written = db.execute(
        "WITH written AS (INSERT INTO vectors (item, conv, model, vec)"
        " SELECT i.id, i.conv, %s, r.vec FROM unnest(%s::bigint[], %s::bigint[], %s::bytea[])"
        " AS r (conv, seq, vec) JOIN items i ON i.conv = r.conv AND i.seq = r.seq"
        " ON CONFLICT (item) DO UPDATE SET model = excluded.model, vec = excluded.vec,"
        " written = nextval('vector_writes') RETURNING item, conv, written),"
        " ended AS (DELETE FROM claims WHERE item IN (SELECT item FROM written))"
        " SELECT w.conv, w.written, i.seq FROM written w JOIN items i ON i.id = w.item",
        (model, keys, seqs, blobs),
    ).fetchall()
    last: dict[int, int] = {}
    for key, number, _ in written:
        last[key] = max(last.get(key, 0), number)
    # A conversation's first vectors name its model. Vectors written into one whose vectors
    # come from another model (a re-embed under way) leave it as it is: finish_reembed marks
    # it once every item has one.
    db.execute(
        "UPDATE conversations SET embed_model = coalesce(embed_model, %s),"
        " vectors_written = greatest(vectors_written, w.written)"
        " FROM unnest(%s::bigint[], %s::bigint[]) AS w (conv, written) WHERE id = w.conv",
        (model, list(last), list(last.values())),
    )
    return {(key, seq) for key, _, seq in written}


class VectorTables(Database, VectorStore):
    """Item vectors as float32 bytes: pending ones for the indexer, stored ones for the index."""

    def pending_vectors(self, model: str, limit: int, after_id: int = 0) -> list[PendingVector]:
        return self._pending(model, "i.id > %s", "i.id", after_id, limit)

    def pending_vectors_of(self, model: str, key: int, limit: int) -> list[PendingVector]:
        # Newest first: what readers wait for is the newest.
        return self._pending(model, "i.conv = %s", "i.seq DESC", key, limit)

    def _pending(
        self, model: str, where: str, order: str, value: int, limit: int
    ) -> list[PendingVector]:
        """Items without a vector for model that meet `where`, in `order`; items of
        conversations whose vectors come from another model wait for a re-embed."""
        with self._read() as db:
            rows = db.execute(
                "SELECT i.id, i.conv, i.seq, i.content FROM items i"
                " LEFT JOIN vectors v ON v.item = i.id AND v.model = %s"
                f" WHERE v.item IS NULL AND {where} AND NOT EXISTS (SELECT 1 FROM conversations c"
                f" WHERE c.id = i.conv AND c.embed_model != %s) ORDER BY {order} LIMIT %s",
                (model, value, model, limit),
            ).fetchall()
        return [PendingVector(r[0], r[1], r[2], text_out(r[3])) for r in rows]

    def put_vectors(
        self, model: str, rows: Sequence[tuple[int, int]], vectors: Vectors
    ) -> set[tuple[int, int]]:
        with self._transaction() as db:
            return write_vectors(db, model, rows, vectors)

    def archived_vectors(self, key: int, model: str) -> tuple[npt.NDArray[np.int64], Vectors]:
        """The archived (or compacted) items' seqs and stored vectors, in seq order."""
        with self._read() as db, db.cursor() as cur:
            cur.execute(
                "SELECT i.seq, v.vec FROM items i JOIN vectors v ON v.item = i.id"
                " WHERE i.conv = %s AND i.state = ANY(%s) AND v.model = %s ORDER BY i.seq",
                (key, _ARCHIVED, model),
            )
            seqs: list[int] = []
            blobs: list[bytes] = []
            while chunk := cur.fetchmany(4096):
                for seq, blob in chunk:
                    seqs.append(seq)
                    blobs.append(blob)
        if not blobs:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
        return np.asarray(seqs, dtype=np.int64), matrix

    def vectors_for(
        self, key: int, seqs: Sequence[int], model: str
    ) -> dict[int, npt.NDArray[np.float32]]:
        """Stored vectors of these items (items without one are left out)."""
        if not len(seqs):
            return {}
        with self._read() as db:
            rows = db.execute(
                "SELECT i.seq, v.vec FROM items i JOIN vectors v ON v.item = i.id"
                " WHERE i.conv = %s AND v.model = %s AND i.seq = ANY(%s)",
                (key, model, [int(s) for s in seqs]),
            ).fetchall()
        return {seq: np.frombuffer(blob, dtype=np.float32) for seq, blob in rows}

    def archived_ids(self, key: int, model: str) -> npt.NDArray[np.int64]:
        with self._read() as db:
            rows = db.execute(
                "SELECT i.seq FROM items i JOIN vectors v ON v.item = i.id"
                " WHERE i.conv = %s AND i.state = ANY(%s) AND v.model = %s ORDER BY i.seq",
                (key, _ARCHIVED, model),
            ).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
