"""What retention reads and removes: conversations with their last activity, archived items
with what the policies judge them by, and items removed with everything derived from them."""

from __future__ import annotations

from collections.abc import Sequence

from contextwm.adapters.postgres.database import Database
from contextwm.adapters.store_rows import CONVERSATION_COLUMNS, record_of
from contextwm.domain.items import Flag, ItemState
from contextwm.ports.retention_store import (
    ArchivedRow,
    ConversationActivity,
    RemovedRows,
    RetentionStore,
)

# When the conversation was last appended to; appends that recorded no time fall back to the
# newest of its creation and its newest item (as the SQLite store does for its older rows).
_LAST_ACTIVE = (
    "coalesce(last_append_at, greatest(created_at,"
    " coalesce((SELECT max(ts) FROM items WHERE conv = conversations.id), created_at)))"
)
_ARCHIVED = [int(ItemState.ARCHIVED), int(ItemState.COMPACTED)]


class RetentionTables(Database, RetentionStore):
    """What retention reads and removes."""

    def conversation_activity(self, namespace: str | None) -> list[ConversationActivity]:
        """The conversations of a namespace (None: of all), by namespace and id, with when
        each was last appended to."""
        where, params = (
            ("WHERE namespace = %s", (namespace,)) if namespace is not None else ("", ())
        )
        with self._read() as db:
            rows = db.execute(
                f"SELECT {CONVERSATION_COLUMNS}, {_LAST_ACTIVE} FROM conversations {where}"
                " ORDER BY namespace, conversation_id",
                params,
            ).fetchall()
        return [ConversationActivity(record_of(r[:-1]), float(r[-1])) for r in rows]

    def last_active(self, key: int) -> float | None:
        """When the conversation was last appended to (None: no such conversation)."""
        with self._read() as db:
            row = db.execute(
                f"SELECT {_LAST_ACTIVE} FROM conversations WHERE id = %s", (key,)
            ).fetchone()
        return None if row is None else float(row[0])

    def archived_rows(
        self, key: int, model: str, seqs: Sequence[int] | None = None
    ) -> list[ArchivedRow]:
        """The archived and compacted items (among seqs, when given), in seq order."""
        among, params = ("", []) if seqs is None else (" AND i.seq = ANY(%s)", [_ints(seqs)])
        with self._read() as db:
            found = db.execute(
                "SELECT i.seq, i.ts, i.flags, v.item IS NOT NULL FROM items i"
                " LEFT JOIN vectors v ON v.item = i.id AND v.model = %s"
                f" WHERE i.conv = %s AND i.state = ANY(%s){among} ORDER BY i.seq",
                (model, key, _ARCHIVED, *params),
            ).fetchall()
        return [
            ArchivedRow(seq, ts, bool(flags & Flag.PINNED), bool(v)) for seq, ts, flags, v in found
        ]

    def remove_items(self, key: int, seqs: Sequence[int]) -> RemovedRows:
        """Deletes those of these items that are archived or compacted, with their postings,
        vectors and facts, and counts them on the conversation (its seqs then have gaps), in
        one transaction."""
        with self._transaction() as db:
            # Their postings and vectors go with them (ON DELETE CASCADE).
            rows = db.execute(
                "DELETE FROM items WHERE conv = %s AND state = ANY(%s) AND seq = ANY(%s)"
                " RETURNING seq, tokens",
                (key, _ARCHIVED, _ints(seqs)),
            ).fetchall()
            if rows:
                # Facts are keyed by seq, not by item: nothing cascades to them.
                db.execute(
                    "DELETE FROM facts WHERE conv = %s AND seq = ANY(%s)",
                    (key, [r[0] for r in rows]),
                )
            db.execute(
                "UPDATE conversations SET removed_items = removed_items + %s WHERE id = %s",
                (len(rows), key),
            )
        return RemovedRows(len(rows), sum(int(r[1]) for r in rows))


def _ints(seqs: Sequence[int]) -> list[int]:
    # A list of Python ints: psycopg adapts that as bigint[] (not a range or numpy's ints).
    return [int(s) for s in seqs]
