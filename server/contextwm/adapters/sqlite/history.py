"""The agent loop's records: facts, context edits, compactions, the active context's rows,
reported usage, truncations."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from contextwm.adapters.history_rows import compaction_of, seqs_json
from contextwm.adapters.sqlite.database import Database, insert_rows
from contextwm.adapters.sqlite.events import write_events
from contextwm.adapters.store_rows import REVERTED
from contextwm.domain.active import ActiveEntry
from contextwm.domain.facts import Fact, FactKind
from contextwm.domain.history import (
    CompactionRecord,
    ContextEdit,
    EditKind,
    Event,
)
from contextwm.domain.items import FileRef, ItemState
from contextwm.domain.usage import Reported
from contextwm.ports.history_store import HistoryStore


def write_facts(db: sqlite3.Connection, key: int, facts: Sequence[Fact]) -> None:
    insert_rows(
        db,
        "facts (conv, seq, kind, text, outcome)",
        [(key, f.seq, str(f.kind), f.text, f.outcome) for f in facts],
    )


def write_edits(db: sqlite3.Connection, key: int, edits: Sequence[ContextEdit]) -> None:
    insert_rows(
        db,
        "edits (conv, id, at, kind, seqs, related_seq, tokens_saved, detail)",
        [
            (
                key,
                e.id,
                e.at,
                str(e.kind),
                seqs_json(e.seqs),
                e.related_seq,
                e.tokens_saved,
                e.detail,
            )
            for e in edits
        ],
    )


class HistoryTables(Database, HistoryStore):
    """Reads and writes of the agent-loop tables."""

    def facts(self, key: int) -> list[Fact]:
        """The facts of the conversation's items that are not reverted, in seq order."""
        rows = (
            self._reader()
            .execute(
                "SELECT f.seq, f.kind, f.text, f.outcome FROM facts f"
                " JOIN items i ON i.conv = f.conv AND i.seq = f.seq"
                " WHERE f.conv = ? AND i.state != ? ORDER BY f.seq, f.rowid",
                (key, REVERTED),
            )
            .fetchall()
        )
        return [Fact(FactKind(r[1]), r[2], r[0], r[3]) for r in rows]

    def active_entries(self, key: int, start: int) -> list[ActiveEntry]:
        """Items from seq `start` on that are not reverted: the active context's raw rows."""
        rows = (
            self._reader()
            .execute(
                "SELECT seq, role, tokens, kind, metadata FROM items"
                " WHERE conv = ? AND seq >= ? AND state != ? ORDER BY seq",
                (key, start, REVERTED),
            )
            .fetchall()
        )
        return [
            ActiveEntry.of(seq, role, tokens, kind, json.loads(meta) if meta else {})
            for seq, role, tokens, kind, meta in rows
        ]

    def whole_file_copies(self, key: int) -> dict[str, int]:
        """Per path, the seq of the newest item that holds the whole file (not reverted)."""
        rows = (
            self._reader()
            .execute(
                "SELECT seq, file_path, file_kind, whole_file FROM items"
                " WHERE conv = ? AND file_path IS NOT NULL AND state != ? ORDER BY seq",
                (key, REVERTED),
            )
            .fetchall()
        )
        return {
            path: seq
            for seq, path, kind, whole in rows
            if FileRef(path, kind, None if whole is None else bool(whole)).carries_whole_file
        }

    def edits(
        self, key: int, *, after_id: int = 0, limit: int = -1, live_only: bool = False
    ) -> list[ContextEdit]:
        """The conversation's context edits in id order (live_only: those not undone)."""
        live = " AND undone_at IS NULL" if live_only else ""
        rows = (
            self._reader()
            .execute(
                "SELECT id, at, kind, seqs, related_seq, tokens_saved, detail, undone_at"
                f" FROM edits WHERE conv = ? AND id > ?{live} ORDER BY id LIMIT ?",
                (key, after_id, limit),
            )
            .fetchall()
        )
        return [
            ContextEdit(r[0], r[1], EditKind(r[2]), tuple(json.loads(r[3])), r[4], r[5], r[6], r[7])
            for r in rows
        ]

    def reverted_among(self, key: int, seqs: Sequence[int]) -> set[int]:
        """Those of these seqs whose items are reverted."""
        out: set[int] = set()
        db = self._reader()
        for start in range(0, len(seqs), 500):
            chunk = list(seqs[start : start + 500])
            rows = db.execute(
                f"SELECT seq FROM items WHERE conv = ? AND state = ?"
                f" AND seq IN ({','.join('?' * len(chunk))})",
                (key, REVERTED, *chunk),
            ).fetchall()
            out.update(r[0] for r in rows)
        return out

    def max_edit_id(self, key: int) -> int:
        row = self._reader().execute("SELECT max(id) FROM edits WHERE conv = ?", (key,)).fetchone()
        return int(row[0] or 0)

    def compactions(
        self, key: int, marker_seqs: Sequence[int] | None = None, *, live_only: bool = False
    ) -> list[CompactionRecord]:
        """Compaction records in marker order, optionally only those with these markers."""
        sql = (
            "SELECT number, at, summary, extractive, marker_seq, items_archived, tokens_before,"
            " tokens_after, ledger, facts, undone_at FROM compactions WHERE conv = ?"
        )
        params: list[Any] = [key]
        if live_only:
            sql += " AND undone_at IS NULL"
        if marker_seqs is not None:
            if not marker_seqs:
                return []
            sql += f" AND marker_seq IN ({','.join('?' * len(marker_seqs))})"
            params.extend(marker_seqs)
        rows = self._reader().execute(sql + " ORDER BY marker_seq", params).fetchall()
        return [compaction_of(r) for r in rows]

    def set_reported(self, key: int, reported: Reported | None) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE conversations SET reported_tokens = ?, reported_server_tokens = ?"
                " WHERE id = ?",
                (
                    reported.tokens if reported else None,
                    reported.server_tokens if reported else None,
                    key,
                ),
            )

    def commit_truncation(
        self,
        key: int,
        edit: ContextEdit,
        archive: Sequence[int],
        events: Sequence[Event],
    ) -> None:
        """Records a truncation; the truncated window items (archive) become archived."""
        with self._transaction() as db:
            write_edits(db, key, [edit])
            db.executemany(
                "UPDATE items SET state = ? WHERE conv = ? AND seq = ?",
                [(int(ItemState.ARCHIVED), key, s) for s in archive],
            )
            db.execute(
                "UPDATE conversations SET reported_tokens = NULL, reported_server_tokens = NULL"
                " WHERE id = ?",
                (key,),
            )
            write_events(db, key, events)
