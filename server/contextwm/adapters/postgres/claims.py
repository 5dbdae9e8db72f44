"""Claims of items to embed on the database replicas share: a claimed item is left to its
claimer until its vector is written, the claim is released, or the lease runs out."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from contextwm.adapters.postgres.codecs import text_out
from contextwm.adapters.postgres.database import Database
from contextwm.ports.vector_claims import VectorClaims
from contextwm.ports.vector_store import PendingVector

# Claimers take turns under this advisory lock, for the milliseconds a claim takes: each sees
# what the one before committed, so batches claimed at once are disjoint.
CLAIM_LOCK = 0x63776D34  # "cwm4"

# Items without a vector for the model, unclaimed or whose claim ran out, that meet `where`;
# items of conversations whose vectors come from another model wait for a re-embed.
# FOR KEY SHARE keeps the picked items from being deleted before the claim commits (a
# deleter waits for it); SKIP LOCKED passes over those a deleter holds already rather than
# waiting for it, which could deadlock (both locking several items, in different orders).
# That lock leaves updates alone: an eviction or a flag set meanwhile never hides an item.
_PICK = (
    "SELECT i.id, i.conv, i.seq, i.content FROM items i"
    " LEFT JOIN vectors v ON v.item = i.id AND v.model = %(model)s"
    " LEFT JOIN claims c ON c.item = i.id"
    " WHERE v.item IS NULL AND (c.item IS NULL OR c.until < now()) AND {where}"
    " AND NOT EXISTS (SELECT 1 FROM conversations cv"
    " WHERE cv.id = i.conv AND cv.embed_model != %(model)s)"
    " ORDER BY {order} LIMIT %(limit)s FOR KEY SHARE OF i SKIP LOCKED"
)


class ClaimTables(Database, VectorClaims):
    """Claims in the claims table, timed by the database's clock, which replicas share."""

    def claim_pending(
        self, model: str, limit: int, after_id: int, owner: str, lease_seconds: float
    ) -> list[PendingVector]:
        with self._transaction() as db:
            db.execute("SELECT pg_advisory_xact_lock(%s)", (CLAIM_LOCK,))
            # Claims that ran out first, whatever their ids: cursors passed them while their
            # owner held them.
            expired = _pick(
                db, model, "i.id IN (SELECT item FROM claims WHERE until < now())", "i.id", 0, limit
            )
            fresh = _pick(db, model, "i.id > %(value)s", "i.id", after_id, limit)
            picked = sorted({p.item_id: p for p in [*expired, *fresh]}.values(), key=_id)
            return _claim(db, picked[:limit], owner, lease_seconds)

    def claim_pending_of(
        self, model: str, key: int, limit: int, owner: str, lease_seconds: float
    ) -> list[PendingVector]:
        with self._transaction() as db:
            db.execute("SELECT pg_advisory_xact_lock(%s)", (CLAIM_LOCK,))
            # Newest first: what readers wait for is the newest.
            picked = _pick(db, model, "i.conv = %(value)s", "i.seq DESC", key, limit)
            return _claim(db, picked, owner, lease_seconds)

    def release_claims(self, owner: str, item_ids: Sequence[int] | None = None) -> None:
        # Run out rather than gone: the next claim of any replica takes them, whatever its
        # cursor.
        with self._transaction() as db:
            if item_ids is None:
                db.execute("UPDATE claims SET until = '-infinity' WHERE owner = %s", (owner,))
                return
            db.execute(
                "UPDATE claims SET until = '-infinity' WHERE owner = %s AND item = ANY(%s)",
                (owner, list(item_ids)),
            )


def _id(p: PendingVector) -> int:
    return p.item_id


def _pick(
    db: psycopg.Connection, model: str, where: str, order: str, value: int, limit: int
) -> list[PendingVector]:
    rows = db.execute(
        _PICK.format(where=where, order=order),
        {"model": model, "value": value, "limit": limit},
    ).fetchall()
    return [PendingVector(r[0], r[1], r[2], text_out(r[3])) for r in rows]


def _claim(
    db: psycopg.Connection, picked: list[PendingVector], owner: str, lease_seconds: float
) -> list[PendingVector]:
    """Claims the picked items for owner; returns those it got, in the order picked."""
    if not picked:
        return []
    # Only from no one or from a lease that ran out: the turn taken makes that so already,
    # and the statement keeps it so by itself.
    got = db.execute(
        "INSERT INTO claims (item, owner, until)"
        " SELECT unnest(%s::bigint[]), %s, now() + make_interval(secs => %s)"
        " ON CONFLICT (item) DO UPDATE SET owner = excluded.owner, until = excluded.until"
        " WHERE claims.until < now() RETURNING item",
        ([p.item_id for p in picked], owner, lease_seconds),
    ).fetchall()
    claimed = {r[0] for r in got}
    return [p for p in picked if p.item_id in claimed]
