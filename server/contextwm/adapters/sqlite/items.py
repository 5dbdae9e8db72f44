"""Items: appended with their evictions, compactions and events in one transaction; read by
seq, page, window or filter."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from contextwm.adapters.history_rows import compaction_row
from contextwm.adapters.sqlite.codecs import filter_sql
from contextwm.adapters.sqlite.database import Database, insert_rows
from contextwm.adapters.sqlite.events import write_events
from contextwm.adapters.sqlite.history import write_edits, write_facts
from contextwm.adapters.sqlite.vectors import write_vectors
from contextwm.adapters.store_rows import ITEM_COLUMNS, item_of, metadata_json
from contextwm.domain.facts import Fact
from contextwm.domain.history import CompactionRecord, ContextEdit, Event
from contextwm.domain.items import Flag, Item, ItemFilter, ItemState
from contextwm.ports.item_store import ItemStore, ItemVectors


def insert_items(
    db: sqlite3.Connection,
    key: int,
    items: Sequence[Item],
    idempotency_keys: Sequence[str | None],
) -> None:
    """Inserts the items; their FTS rows come from FTS_TRIGGER."""
    insert_rows(
        db,
        "items (conv, seq, role, content, ts, tokens, flags, metadata, file_path,"
        " file_kind, state, idem, kind, whole_file)",
        [
            (
                key,
                item.seq,
                item.role,
                item.content,
                item.timestamp,
                item.token_count,
                int(item.flags),
                metadata_json(item.metadata),
                item.file.path if item.file else None,
                item.file.kind if item.file else None,
                int(item.state),
                idem,
                item.kind,
                None
                if item.file is None or item.file.whole_file is None
                else int(item.file.whole_file),
            )
            for item, idem in zip(items, idempotency_keys, strict=True)
        ],
    )


def archive_rows(db: sqlite3.Connection, key: int, seqs: Sequence[int]) -> None:
    """Marks these items archived: one UPDATE per 500 rather than one per item (see
    insert_rows on why statements are counted)."""
    for start in range(0, len(seqs), 500):
        chunk = list(seqs[start : start + 500])
        marks = ",".join("?" * len(chunk))
        db.execute(
            f"UPDATE items SET state = ? WHERE conv = ? AND seq IN ({marks})",
            (int(ItemState.ARCHIVED), key, *chunk),
        )


class ItemTables(Database, ItemStore):
    """Reads and writes of the items table."""

    def find_idempotent(self, key: int, idempotency_keys: Sequence[str]) -> dict[str, Item]:
        found: dict[str, Item] = {}
        db = self._reader()
        for idem in idempotency_keys:
            row = db.execute(
                f"SELECT {ITEM_COLUMNS} FROM items i JOIN conversations c ON c.id = i.conv"
                " WHERE i.conv = ? AND i.idem = ?",
                (key, idem),
            ).fetchone()
            if row:
                found[idem] = item_of(row)
        return found

    def commit_append(
        self,
        key: int,
        items: Sequence[Item],
        idempotency_keys: Sequence[str | None],
        evicted: Sequence[int],
        token_limit: int,
        state: str,
        *,
        facts: Sequence[Fact] = (),
        edits: Sequence[ContextEdit] = (),
        events: Sequence[Event] = (),
        vectors: ItemVectors | None = None,
        appended_at: float | None = None,
    ) -> None:
        with self._transaction() as db:
            insert_items(db, key, items, idempotency_keys)
            if vectors is not None:
                write_vectors(db, vectors.model, [(key, s) for s in vectors.seqs], vectors.vectors)
            archive_rows(db, key, evicted)
            last_seq = max((i.seq for i in items), default=0)
            # One UPDATE of the conversation row per append, the event counter included.
            db.execute(
                "UPDATE conversations SET last_seq = max(last_seq, ?), token_limit = ?, state = ?,"
                " last_event = max(last_event, ?), last_append_at = coalesce(?, last_append_at)"
                " WHERE id = ?",
                (
                    last_seq,
                    token_limit,
                    state,
                    events[-1].number if events else 0,
                    appended_at,
                    key,
                ),
            )
            write_facts(db, key, facts)
            write_edits(db, key, edits)
            write_events(db, key, events, counter=False)

    def commit_compaction(
        self,
        key: int,
        marker: Item,
        record: CompactionRecord,
        edit: ContextEdit,
        evicted: Sequence[int],
        events: Sequence[Event],
    ) -> None:
        """Adds the marker item, moves every earlier item in the window or archive behind
        the compaction, records it, and starts the active context at the marker."""
        with self._transaction(changes=key) as db:
            insert_items(db, key, [marker], [None])
            db.execute(
                "UPDATE items SET state = ? WHERE conv = ? AND seq < ? AND state IN (?, ?)",
                (
                    int(ItemState.COMPACTED),
                    key,
                    marker.seq,
                    int(ItemState.WINDOW),
                    int(ItemState.ARCHIVED),
                ),
            )
            # The marker itself, when it is larger than the whole window.
            archive_rows(db, key, evicted)
            db.execute(
                "INSERT INTO compactions (conv, number, at, summary, extractive, marker_seq,"
                " items_archived, tokens_before, tokens_after, ledger, facts)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                compaction_row(key, record),
            )
            write_edits(db, key, [edit])
            db.execute(
                "UPDATE conversations SET last_seq = max(last_seq, ?), active_start = ?,"
                " reported_tokens = NULL, reported_server_tokens = NULL WHERE id = ?",
                (marker.seq, marker.seq, key),
            )
            write_events(db, key, events)

    def set_flags(self, key: int, seq: int, flags: Flag) -> None:
        with self._transaction(changes=key) as db:
            db.execute(
                "UPDATE items SET flags = ? WHERE conv = ? AND seq = ?", (int(flags), key, seq)
            )

    def get_items(self, key: int, seqs: Sequence[int]) -> dict[int, Item]:
        if not seqs:
            return {}
        out, missing = self._memo.items(key, seqs)
        if missing:
            generation = self._memo.generation
            read = self._read_items(key, missing)
            self._memo.keep(key, generation, read.values())
            out.update(read)
        return out

    def _read_items(self, key: int, seqs: Sequence[int]) -> dict[int, Item]:
        out: dict[int, Item] = {}
        db = self._reader()
        # Chunked: SQLite caps the number of bound parameters.
        for start in range(0, len(seqs), 500):
            chunk = list(seqs[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = db.execute(
                f"SELECT {ITEM_COLUMNS} FROM items i JOIN conversations c ON c.id = i.conv"
                f" WHERE i.conv = ? AND i.seq IN ({marks})",
                (key, *chunk),
            ).fetchall()
            for row in rows:
                item = item_of(row)
                out[item.seq] = item
        return out

    def file_paths(self, key: int, limit: int) -> list[str]:
        rows = (
            self._reader()
            .execute(
                "SELECT file_path FROM items WHERE conv = ? AND file_path IS NOT NULL"
                " AND state != ? GROUP BY file_path ORDER BY MAX(seq) DESC LIMIT ?",
                (key, int(ItemState.REVERTED), limit),
            )
            .fetchall()
        )
        return [r[0] for r in rows]

    def list_items(
        self, key: int, after_seq: int, limit: int, states: Sequence[ItemState]
    ) -> list[Item]:
        state_clause = ""
        params: list[Any] = [key, after_seq]
        if states:
            state_clause = f" AND i.state IN ({','.join('?' * len(states))})"
            params.extend(int(s) for s in states)
        params.append(limit)
        rows = (
            self._reader()
            .execute(
                f"SELECT {ITEM_COLUMNS} FROM items i JOIN conversations c ON c.id = i.conv"
                f" WHERE i.conv = ? AND i.seq > ?{state_clause} ORDER BY i.seq LIMIT ?",
                params,
            )
            .fetchall()
        )
        return [item_of(r) for r in rows]

    def window_items(
        self, key: int, model: str
    ) -> list[tuple[Item, npt.NDArray[np.float32] | None]]:
        rows = (
            self._reader()
            .execute(
                f"SELECT {ITEM_COLUMNS}, v.vec FROM items i"
                " JOIN conversations c ON c.id = i.conv"
                " LEFT JOIN vectors v ON v.item = i.id AND v.model = ?"
                " WHERE i.conv = ? AND i.state = ? ORDER BY i.seq",
                (model, key, int(ItemState.WINDOW)),
            )
            .fetchall()
        )
        return [
            (item_of(r), np.frombuffer(r[13], dtype=np.float32) if r[13] is not None else None)
            for r in rows
        ]

    def filtered_seqs(
        self, key: int, flt: ItemFilter, states: Sequence[ItemState], limit: int
    ) -> npt.NDArray[np.int64]:
        """Seqs of the newest items (up to limit) in these states that match the filter."""
        where, params = filter_sql(flt)
        rows = (
            self._reader()
            .execute(
                f"SELECT i.seq FROM items i WHERE i.conv = ?"
                f" AND i.state IN ({','.join('?' * len(states))}){where}"
                " ORDER BY i.seq DESC LIMIT ?",
                (key, *(int(s) for s in states), *params, limit),
            )
            .fetchall()
        )
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
