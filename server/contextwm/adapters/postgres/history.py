"""The agent loop's records: facts, context edits, compactions, the active context's rows,
reported usage, truncations."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg

from contextwm.adapters.history_rows import compaction_of, seqs_json
from contextwm.adapters.postgres.codecs import text_in, text_out
from contextwm.adapters.postgres.database import Database, copy_rows
from contextwm.adapters.postgres.events import write_events
from contextwm.adapters.store_rows import REVERTED
from contextwm.domain.active import ActiveEntry
from contextwm.domain.facts import Fact, FactKind
from contextwm.domain.history import CompactionRecord, ContextEdit, EditKind, Event
from contextwm.domain.items import FileRef, ItemState
from contextwm.domain.usage import Reported
from contextwm.ports.history_store import HistoryStore


def write_facts(db: psycopg.Connection, key: int, facts: Sequence[Fact]) -> None:
    copy_rows(
        db,
        "facts (conv, seq, kind, text, outcome)",
        [(key, f.seq, str(f.kind), text_in(f.text), text_in(f.outcome)) for f in facts],
    )


def write_edits(db: psycopg.Connection, key: int, edits: Sequence[ContextEdit]) -> None:
    copy_rows(
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
                text_in(e.detail),
            )
            for e in edits
        ],
    )


class HistoryTables(Database, HistoryStore):
    """Reads and writes of the agent-loop tables."""

    def facts(self, key: int) -> list[Fact]:
        with self._read() as db:
            rows = db.execute(
                "SELECT f.seq, f.kind, f.text, f.outcome FROM facts f"
                " JOIN items i ON i.conv = f.conv AND i.seq = f.seq"
                " WHERE f.conv = %s AND i.state != %s ORDER BY f.seq, f.id",
                (key, REVERTED),
            ).fetchall()
        return [Fact(FactKind(r[1]), text_out(r[2]), r[0], text_out(r[3])) for r in rows]

    def active_entries(self, key: int, start: int) -> list[ActiveEntry]:
        with self._read() as db:
            rows = db.execute(
                "SELECT seq, role, tokens, kind, metadata FROM items"
                " WHERE conv = %s AND seq >= %s AND state != %s ORDER BY seq",
                (key, start, REVERTED),
            ).fetchall()
        return [
            ActiveEntry.of(seq, role, tokens, kind, json.loads(meta) if meta else {})
            for seq, role, tokens, kind, meta in rows
        ]

    def whole_file_copies(self, key: int) -> dict[str, int]:
        with self._read() as db:
            rows = db.execute(
                "SELECT seq, file_path, file_kind, whole_file FROM items"
                " WHERE conv = %s AND file_path IS NOT NULL AND state != %s ORDER BY seq",
                (key, REVERTED),
            ).fetchall()
        return {
            text_out(path): seq
            for seq, path, kind, whole in rows
            if FileRef(path, kind, None if whole is None else bool(whole)).carries_whole_file
        }

    def edits(
        self, key: int, *, after_id: int = 0, limit: int = -1, live_only: bool = False
    ) -> list[ContextEdit]:
        live = " AND undone_at IS NULL" if live_only else ""
        with self._read() as db:
            rows = db.execute(
                "SELECT id, at, kind, seqs, related_seq, tokens_saved, detail, undone_at"
                f" FROM edits WHERE conv = %s AND id > %s{live} ORDER BY id LIMIT %s",
                (key, after_id, None if limit < 0 else limit),
            ).fetchall()
        return [
            ContextEdit(
                r[0],
                r[1],
                EditKind(r[2]),
                tuple(json.loads(r[3])),
                r[4],
                r[5],
                text_out(r[6]),
                r[7],
            )
            for r in rows
        ]

    def reverted_among(self, key: int, seqs: Sequence[int]) -> set[int]:
        if not len(seqs):
            return set()
        with self._read() as db:
            rows = db.execute(
                "SELECT seq FROM items WHERE conv = %s AND state = %s AND seq = ANY(%s)",
                (key, REVERTED, [int(s) for s in seqs]),
            ).fetchall()
        return {r[0] for r in rows}

    def max_edit_id(self, key: int) -> int:
        with self._read() as db:
            row = db.execute("SELECT max(id) FROM edits WHERE conv = %s", (key,)).fetchone()
        return int(row[0] or 0) if row else 0

    def compactions(
        self, key: int, marker_seqs: Sequence[int] | None = None, *, live_only: bool = False
    ) -> list[CompactionRecord]:
        sql = (
            "SELECT number, at, summary, extractive, marker_seq, items_archived, tokens_before,"
            " tokens_after, ledger, facts, undone_at FROM compactions WHERE conv = %s"
        )
        params: list[Any] = [key]
        if live_only:
            sql += " AND undone_at IS NULL"
        if marker_seqs is not None:
            if not marker_seqs:
                return []
            sql += " AND marker_seq = ANY(%s)"
            params.append([int(s) for s in marker_seqs])
        with self._read() as db:
            rows = db.execute(sql + " ORDER BY marker_seq", params).fetchall()
        return [compaction_of(_compaction_text_out(r)) for r in rows]

    def set_reported(self, key: int, reported: Reported | None) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE conversations SET reported_tokens = %s, reported_server_tokens = %s"
                " WHERE id = %s",
                (
                    reported.tokens if reported else None,
                    reported.server_tokens if reported else None,
                    key,
                ),
            )

    def commit_truncation(
        self, key: int, edit: ContextEdit, archive: Sequence[int], events: Sequence[Event]
    ) -> None:
        with self._transaction() as db:
            write_edits(db, key, [edit])
            if archive:
                db.execute(
                    "UPDATE items SET state = %s WHERE conv = %s AND seq = ANY(%s)",
                    (int(ItemState.ARCHIVED), key, list(archive)),
                )
            db.execute(
                "UPDATE conversations SET reported_tokens = NULL, reported_server_tokens = NULL"
                " WHERE id = %s",
                (key,),
            )
            write_events(db, key, events)


def _compaction_text_out(row: Sequence[Any]) -> list[Any]:
    """A compactions row with its summary and ledger decoded."""
    fields = list(row)
    fields[2], fields[8] = text_out(fields[2]), text_out(fields[8])
    return fields
