"""What retention reads and removes: conversations with their last activity, archived items
with what the policies judge them by, and items removed with everything derived from them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from contextwm.adapters.sqlite.database import Database
from contextwm.adapters.store_rows import CONVERSATION_COLUMNS, record_of
from contextwm.domain.items import Flag, ItemState
from contextwm.ports.retention_store import (
    ArchivedRow,
    ConversationActivity,
    RemovedRows,
    RetentionStore,
)

# When the conversation was last appended to; rows from before the column existed fall back
# to the newest of its creation and its newest item.
_LAST_ACTIVE = (
    "coalesce(last_append_at, max(created_at,"
    " coalesce((SELECT max(ts) FROM items WHERE conv = conversations.id), created_at)))"
)
_ARCHIVED = (int(ItemState.ARCHIVED), int(ItemState.COMPACTED))
_CHUNK = 500  # seqs per statement: SQLite caps the bound parameters


def _chunks(seqs: Sequence[int]) -> Iterator[list[int]]:
    for start in range(0, len(seqs), _CHUNK):
        yield [int(s) for s in seqs[start : start + _CHUNK]]


def _marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


class RetentionTables(Database, RetentionStore):
    """What retention reads and removes."""

    def conversation_activity(self, namespace: str | None) -> list[ConversationActivity]:
        """The conversations of a namespace (None: of all), by namespace and id, with when
        each was last appended to."""
        where, params = ("WHERE namespace = ?", (namespace,)) if namespace is not None else ("", ())
        rows = (
            self._reader()
            .execute(
                f"SELECT {CONVERSATION_COLUMNS}, {_LAST_ACTIVE} FROM conversations {where}"
                " ORDER BY namespace, conversation_id",
                params,
            )
            .fetchall()
        )
        return [ConversationActivity(record_of(r[:-1]), float(r[-1])) for r in rows]

    def last_active(self, key: int) -> float | None:
        """When the conversation was last appended to (None: no such conversation)."""
        row = (
            self._reader()
            .execute(f"SELECT {_LAST_ACTIVE} FROM conversations WHERE id = ?", (key,))
            .fetchone()
        )
        return None if row is None else float(row[0])

    def archived_rows(
        self, key: int, model: str, seqs: Sequence[int] | None = None
    ) -> list[ArchivedRow]:
        """The archived and compacted items (among seqs, when given), in seq order."""
        select = (
            "SELECT i.seq, i.ts, i.flags, v.item IS NOT NULL FROM items i"
            " LEFT JOIN vectors v ON v.item = i.id AND v.model = ?"
            " WHERE i.conv = ? AND i.state IN (?, ?)"
        )
        db = self._reader()
        if seqs is None:
            found = db.execute(select + " ORDER BY i.seq", (model, key, *_ARCHIVED)).fetchall()
        else:
            found = []
            for chunk in _chunks(sorted(seqs)):
                found += db.execute(
                    f"{select} AND i.seq IN ({_marks(chunk)}) ORDER BY i.seq",
                    (model, key, *_ARCHIVED, *chunk),
                ).fetchall()
        return [
            ArchivedRow(seq, ts, bool(flags & Flag.PINNED), bool(v)) for seq, ts, flags, v in found
        ]

    def remove_items(self, key: int, seqs: Sequence[int]) -> RemovedRows:
        """Deletes those of these items that are archived or compacted, with their full-text
        rows, vectors and facts, and counts them on the conversation (its seqs then have
        gaps), in one transaction."""
        count = tokens = 0
        with self._transaction(changes=key) as db:
            for chunk in _chunks(seqs):
                rows = db.execute(
                    "SELECT id, seq, content, tokens FROM items WHERE conv = ? AND state IN (?, ?)"
                    f" AND seq IN ({_marks(chunk)})",
                    (key, *_ARCHIVED, *chunk),
                ).fetchall()
                if not rows:
                    continue
                # A contentless FTS5 table forgets a row only when told its original values.
                db.executemany(
                    "INSERT INTO items_fts (items_fts, rowid, content, tag)"
                    " VALUES ('delete', ?, ?, ?)",
                    [(r[0], r[2], f"c{key}") for r in rows],
                )
                found = [r[1] for r in rows]
                db.execute(
                    f"DELETE FROM facts WHERE conv = ? AND seq IN ({_marks(found)})", (key, *found)
                )
                # Their vectors go with them (ON DELETE CASCADE).
                ids = [r[0] for r in rows]
                db.execute(f"DELETE FROM items WHERE id IN ({_marks(ids)})", ids)
                count += len(rows)
                tokens += sum(r[3] for r in rows)
            db.execute(
                "UPDATE conversations SET removed_items = removed_items + ? WHERE id = ?",
                (count, key),
            )
        return RemovedRows(count, tokens)
