"""Checkpoints: the item states they record, and restoring them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from contextwm.adapters.history_rows import checkpoint_json, checkpoint_of
from contextwm.adapters.sqlite.database import Database
from contextwm.adapters.sqlite.events import write_events
from contextwm.adapters.store_rows import REVERTED
from contextwm.domain.errors import AlreadyExists
from contextwm.domain.history import (
    Checkpoint,
    Event,
    StateRun,
)
from contextwm.domain.items import ItemState
from contextwm.ports.checkpoint_store import CheckpointStore


class CheckpointTables(Database, CheckpointStore):
    """Checkpoints: the item states they record, and restoring them."""

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
        return [checkpoint_of(json.loads(r[0])) for r in rows]

    def checkpoint(self, key: int, name: str) -> Checkpoint | None:
        row = (
            self._reader()
            .execute("SELECT snapshot FROM checkpoints WHERE conv = ? AND name = ?", (key, name))
            .fetchone()
        )
        return checkpoint_of(json.loads(row[0])) if row else None

    def add_checkpoint(self, key: int, checkpoint: Checkpoint, events: Sequence[Event]) -> None:
        """Stores a checkpoint. Raises AlreadyExists for a name in use."""
        with self._transaction() as db:
            try:
                db.execute(
                    "INSERT INTO checkpoints (conv, name, at, snapshot) VALUES (?, ?, ?, ?)",
                    (key, checkpoint.name, checkpoint.at, json.dumps(checkpoint_json(checkpoint))),
                )
            except sqlite3.IntegrityError:
                raise AlreadyExists(f"checkpoint {checkpoint.name!r} already exists") from None
            write_events(db, key, events)

    def commit_restore(
        self, key: int, checkpoint: Checkpoint, now: float, events: Sequence[Event]
    ) -> tuple[int, int]:
        """Puts every item back in its state at the checkpoint, reverts later items and
        undoes later edits and compactions. Returns (items reverted, edits undone)."""
        with self._transaction(changes=key) as db:
            reverted = db.execute(
                "UPDATE items SET state = ? WHERE conv = ? AND seq > ? AND state != ?",
                (REVERTED, key, checkpoint.last_seq, REVERTED),
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
            write_events(db, key, events)
        return reverted, undone
