"""The SQLite tables of the agent loop: facts, context edits, compactions, checkpoints, events.

A mixin of SqliteStore: it shares its connections and writes inside its transactions, so an
append, its facts, its duplicate-read edits and its events commit together.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from contextwm.domain.active import ActiveEntry, ActiveTotals
from contextwm.domain.errors import AlreadyExists
from contextwm.domain.facts import Fact, FactKind
from contextwm.domain.history import (
    Checkpoint,
    CheckpointChange,
    CompactionRecord,
    ContextEdit,
    EditKind,
    Event,
    EventKind,
    EventPayload,
    StateRun,
)
from contextwm.domain.items import FileRef, ItemState
from contextwm.domain.usage import ContextLimits, Reported, Usage

_REVERTED = int(ItemState.REVERTED)
# The fewest bound parameters a SQLite build allows per statement (older builds: 999).
_MAX_PARAMETERS = 999


def insert_rows(db: sqlite3.Connection, into: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """INSERT INTO `into` (a table and its column list) these rows, as many per statement as
    the parameter limit allows rather than one statement per row (executemany): every
    sqlite3 call releases and re-takes the interpreter lock, which under concurrent appends
    is a switch to another thread and back per call."""
    if not rows:
        return
    width = len(rows[0])
    per_statement = _MAX_PARAMETERS // width
    marks = "(" + ", ".join("?" * width) + ")"
    for start in range(0, len(rows), per_statement):
        chunk = rows[start : start + per_statement]
        db.execute(
            f"INSERT INTO {into} VALUES {', '.join([marks] * len(chunk))}",
            [value for row in chunk for value in row],
        )


class HistoryTables:
    """Reads and writes of the agent-loop tables; SqliteStore provides the connections."""

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _reader(self) -> sqlite3.Connection:
        raise NotImplementedError

    # ------------------------------------------------------------ writes inside a transaction

    @staticmethod
    def _write_facts(db: sqlite3.Connection, key: int, facts: Sequence[Fact]) -> None:
        insert_rows(
            db,
            "facts (conv, seq, kind, text, outcome)",
            [(key, f.seq, str(f.kind), f.text, f.outcome) for f in facts],
        )

    @staticmethod
    def _write_edits(db: sqlite3.Connection, key: int, edits: Sequence[ContextEdit]) -> None:
        insert_rows(
            db,
            "edits (conv, id, at, kind, seqs, related_seq, tokens_saved, detail)",
            [
                (
                    key,
                    e.id,
                    e.at,
                    str(e.kind),
                    _seqs_json(e.seqs),
                    e.related_seq,
                    e.tokens_saved,
                    e.detail,
                )
                for e in edits
            ],
        )

    @staticmethod
    def _write_events(
        db: sqlite3.Connection, key: int, events: Sequence[Event], *, counter: bool = True
    ) -> None:
        """Stores events; counter=False when the caller updates conversations.last_event."""
        if not events:
            return
        insert_rows(
            db,
            "events (conv, number, at, kind, payload)",
            [(key, e.number, e.at, str(e.kind), json.dumps(_encode(e.payload))) for e in events],
        )
        if counter:
            db.execute(
                "UPDATE conversations SET last_event = ? WHERE id = ?", (events[-1].number, key)
            )

    # ------------------------------------------------------------ reads

    def facts(self, key: int) -> list[Fact]:
        """The facts of the conversation's items that are not reverted, in seq order."""
        rows = (
            self._reader()
            .execute(
                "SELECT f.seq, f.kind, f.text, f.outcome FROM facts f"
                " JOIN items i ON i.conv = f.conv AND i.seq = f.seq"
                " WHERE f.conv = ? AND i.state != ? ORDER BY f.seq, f.rowid",
                (key, _REVERTED),
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
                (key, start, _REVERTED),
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
                (key, _REVERTED),
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
                (key, _REVERTED, *chunk),
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
        return [_compaction(r) for r in rows]

    def item_state_runs(self, key: int) -> list[StateRun]:
        """Every item's state as runs of equal states, in seq order."""
        runs: list[StateRun] = []
        cursor = self._reader().execute(
            "SELECT seq, state FROM items WHERE conv = ? ORDER BY seq", (key,)
        )
        first = last = state = -1
        while chunk := cursor.fetchmany(4096):
            for seq, st in chunk:
                if st == state and seq == last + 1:
                    last = seq
                    continue
                if state != -1:
                    runs.append(StateRun(first, last, ItemState(state)))
                first = last = seq
                state = st
        if state != -1:
            runs.append(StateRun(first, last, ItemState(state)))
        return runs

    def checkpoints(self, key: int) -> list[Checkpoint]:
        rows = (
            self._reader()
            .execute("SELECT snapshot FROM checkpoints WHERE conv = ? ORDER BY id", (key,))
            .fetchall()
        )
        return [_checkpoint(json.loads(r[0])) for r in rows]

    def checkpoint(self, key: int, name: str) -> Checkpoint | None:
        row = (
            self._reader()
            .execute("SELECT snapshot FROM checkpoints WHERE conv = ? AND name = ?", (key, name))
            .fetchone()
        )
        return _checkpoint(json.loads(row[0])) if row else None

    def events_after(self, key: int, after: int, limit: int) -> list[Event]:
        rows = (
            self._reader()
            .execute(
                "SELECT number, at, kind, payload FROM events WHERE conv = ? AND number > ?"
                " ORDER BY number LIMIT ?",
                (key, after, limit),
            )
            .fetchall()
        )
        return [
            Event(r[0], r[1], EventKind(r[2]), _decode(EventKind(r[2]), json.loads(r[3])))
            for r in rows
        ]

    def first_event_number(self, key: int) -> int | None:
        row = (
            self._reader()
            .execute("SELECT min(number) FROM events WHERE conv = ?", (key,))
            .fetchone()
        )
        return int(row[0]) if row[0] is not None else None

    # ------------------------------------------------------------ transactions

    def record_events(self, key: int, events: Sequence[Event]) -> None:
        with self._transaction() as db:
            self._write_events(db, key, events)

    def prune_events(self, older_than: float) -> int:
        """Drops events older than the retention; returns how many."""
        with self._transaction() as db:
            return db.execute("DELETE FROM events WHERE at < ?", (older_than,)).rowcount

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

    def add_checkpoint(self, key: int, checkpoint: Checkpoint, events: Sequence[Event]) -> None:
        """Stores a checkpoint. Raises AlreadyExists for a name in use."""
        with self._transaction() as db:
            try:
                db.execute(
                    "INSERT INTO checkpoints (conv, name, at, snapshot) VALUES (?, ?, ?, ?)",
                    (key, checkpoint.name, checkpoint.at, json.dumps(_checkpoint_json(checkpoint))),
                )
            except sqlite3.IntegrityError:
                raise AlreadyExists(f"checkpoint {checkpoint.name!r} already exists") from None
            self._write_events(db, key, events)

    def commit_truncation(
        self,
        key: int,
        edit: ContextEdit,
        archive: Sequence[int],
        events: Sequence[Event],
    ) -> None:
        """Records a truncation; the truncated window items (archive) become archived."""
        with self._transaction() as db:
            self._write_edits(db, key, [edit])
            db.executemany(
                "UPDATE items SET state = ? WHERE conv = ? AND seq = ?",
                [(int(ItemState.ARCHIVED), key, s) for s in archive],
            )
            db.execute(
                "UPDATE conversations SET reported_tokens = NULL, reported_server_tokens = NULL"
                " WHERE id = ?",
                (key,),
            )
            self._write_events(db, key, events)

    def commit_restore(
        self, key: int, checkpoint: Checkpoint, now: float, events: Sequence[Event]
    ) -> tuple[int, int]:
        """Puts every item back in its state at the checkpoint, reverts later items and
        undoes later edits and compactions. Returns (items reverted, edits undone)."""
        with self._transaction() as db:
            reverted = db.execute(
                "UPDATE items SET state = ? WHERE conv = ? AND seq > ? AND state != ?",
                (_REVERTED, key, checkpoint.last_seq, _REVERTED),
            ).rowcount
            for run in checkpoint.states:
                db.execute(
                    "UPDATE items SET state = ? WHERE conv = ? AND seq BETWEEN ? AND ?"
                    " AND state != ?",
                    (int(run.state), key, run.first, run.last, int(run.state)),
                )
            undone = db.execute(
                "UPDATE edits SET undone_at = ? WHERE conv = ? AND id > ? AND undone_at IS NULL",
                (now, key, checkpoint.edit_id),
            ).rowcount
            db.execute(
                "UPDATE compactions SET undone_at = ? WHERE conv = ? AND marker_seq > ?"
                " AND undone_at IS NULL",
                (now, key, checkpoint.last_seq),
            )
            db.execute(
                "UPDATE conversations SET active_start = ?, token_limit = ?, state = ?,"
                " reported_tokens = ?, reported_server_tokens = ? WHERE id = ?",
                (
                    checkpoint.active_start,
                    checkpoint.token_limit,
                    checkpoint.state,
                    checkpoint.reported.tokens if checkpoint.reported else None,
                    checkpoint.reported.server_tokens if checkpoint.reported else None,
                    key,
                ),
            )
            self._write_events(db, key, events)
        return reverted, undone


def _seqs_json(seqs: Sequence[int]) -> str:
    return json.dumps(list(seqs), separators=(",", ":"))


def _compaction(r: Sequence[Any]) -> CompactionRecord:
    return CompactionRecord(
        number=r[0],
        at=r[1],
        summary=r[2],
        extractive=bool(r[3]),
        marker_seq=r[4],
        items_archived=r[5],
        tokens_before=r[6],
        tokens_after=r[7],
        ledger=r[8],
        facts=tuple(_fact(f) for f in json.loads(r[9])),
        undone_at=r[10],
    )


def _fact(d: dict[str, Any]) -> Fact:
    return Fact(FactKind(d["kind"]), d["text"], d["seq"], d.get("outcome", ""))


def _fact_json(f: Fact) -> dict[str, Any]:
    return {"kind": str(f.kind), "text": f.text, "seq": f.seq, "outcome": f.outcome}


def compaction_row(key: int, c: CompactionRecord) -> tuple[Any, ...]:
    """The compactions row of a record (SqliteStore writes it with the marker item)."""
    return (
        key,
        c.number,
        c.at,
        c.summary,
        int(c.extractive),
        c.marker_seq,
        c.items_archived,
        c.tokens_before,
        c.tokens_after,
        c.ledger,
        json.dumps([_fact_json(f) for f in c.facts]),
    )


def _checkpoint_json(c: Checkpoint) -> dict[str, Any]:
    return {
        "name": c.name,
        "at": c.at,
        "last_seq": c.last_seq,
        "active_tokens": c.active_tokens,
        "compactions": c.compactions,
        "edit_id": c.edit_id,
        "active_start": c.active_start,
        "token_limit": c.token_limit,
        "state": c.state,
        "states": [[r.first, r.last, int(r.state)] for r in c.states],
        "reported": [c.reported.tokens, c.reported.server_tokens] if c.reported else None,
    }


def _checkpoint(d: dict[str, Any]) -> Checkpoint:
    return Checkpoint(
        name=d["name"],
        at=d["at"],
        last_seq=d["last_seq"],
        active_tokens=d["active_tokens"],
        compactions=d["compactions"],
        edit_id=d["edit_id"],
        active_start=d["active_start"],
        token_limit=d["token_limit"],
        state=d["state"],
        states=tuple(StateRun(a, b, ItemState(s)) for a, b, s in d["states"]),
        reported=Reported(*d["reported"]) if d["reported"] else None,
    )


def _edit_json(e: ContextEdit) -> dict[str, Any]:
    return {
        "id": e.id,
        "at": e.at,
        "kind": str(e.kind),
        "seqs": list(e.seqs),
        "related_seq": e.related_seq,
        "tokens_saved": e.tokens_saved,
        "detail": e.detail,
        "undone_at": e.undone_at,
    }


def _edit(d: dict[str, Any]) -> ContextEdit:
    return ContextEdit(
        d["id"],
        d["at"],
        EditKind(d["kind"]),
        tuple(d["seqs"]),
        d["related_seq"],
        d["tokens_saved"],
        d["detail"],
        d["undone_at"],
    )


def _encode(payload: EventPayload) -> Any:
    """An event payload as JSON data (the events table keeps them for Watch to replay)."""
    if isinstance(payload, Usage):
        # Field by field rather than dataclasses.asdict, whose deep copy was a fifth of an
        # append's time (one usage event per append).
        data = _fields(payload)
        data["limits"] = _fields(payload.limits)
        data["totals"] = _fields(payload.totals)
        return data
    if isinstance(payload, tuple):
        return list(payload)
    if isinstance(payload, CompactionRecord):
        c = dataclasses.asdict(payload)
        c["facts"] = [_fact_json(f) for f in payload.facts]
        return c
    if isinstance(payload, ContextEdit):
        return _edit_json(payload)
    if isinstance(payload, CheckpointChange):
        return {
            "checkpoint": _checkpoint_json(payload.checkpoint),
            "reverted": payload.reverted_items,
        }
    return payload


def _fields(value: Any) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__dataclass_fields__}


def _decode(kind: EventKind, data: Any) -> EventPayload:
    if kind is EventKind.USAGE:
        limits = ContextLimits(**data.pop("limits"))
        totals = ActiveTotals(**data.pop("totals"))
        return Usage(limits=limits, totals=totals, **data)
    if kind is EventKind.EVICTION:
        return tuple(data)
    if kind is EventKind.COMPACTION:
        data["facts"] = tuple(_fact(f) for f in data["facts"])
        return CompactionRecord(**data)
    if kind in (EventKind.TRUNCATION, EventKind.DUPLICATE_READ):
        return _edit(data)
    if kind in (EventKind.CHECKPOINT_CREATED, EventKind.CHECKPOINT_RESTORED):
        return CheckpointChange(_checkpoint(data["checkpoint"]), data["reverted"])
    return int(data)
