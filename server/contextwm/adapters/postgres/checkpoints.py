"""Checkpoints: the item states they record, and restoring them."""

from __future__ import annotations

import json
from collections.abc import Sequence

import psycopg

from contextwm.adapters.history_rows import checkpoint_json, checkpoint_of
from contextwm.adapters.postgres.database import Database
from contextwm.adapters.postgres.events import write_events
from contextwm.adapters.store_rows import REVERTED
from contextwm.domain.errors import AlreadyExists
from contextwm.domain.history import Checkpoint, Event, StateRun
from contextwm.domain.items import ItemState
from contextwm.ports.checkpoint_store import CheckpointStore


class CheckpointTables(Database, CheckpointStore):
    """Checkpoints: the item states they record, and restoring them."""

    def item_state_runs(self, key: int) -> list[StateRun]:
        """Every item's state as runs of equal states over consecutive seqs, in seq order."""
        # Gaps and islands: within a run, seq - row_number is constant.
        with self._read() as db:
            rows = db.execute(
                "SELECT min(seq), max(seq), state FROM (SELECT seq, state, seq - row_number()"
                " OVER (PARTITION BY state ORDER BY seq) AS island FROM items WHERE conv = %s) r"
                " GROUP BY state, island ORDER BY min(seq)",
                (key,),
            ).fetchall()
        return [StateRun(first, last, ItemState(state)) for first, last, state in rows]

    def checkpoints(self, key: int) -> list[Checkpoint]:
        with self._read() as db:
            rows = db.execute(
                "SELECT snapshot FROM checkpoints WHERE conv = %s ORDER BY id", (key,)
            ).fetchall()
        return [checkpoint_of(json.loads(r[0])) for r in rows]

    def checkpoint(self, key: int, name: str) -> Checkpoint | None:
        with self._read() as db:
            row = db.execute(
                "SELECT snapshot FROM checkpoints WHERE conv = %s AND name = %s", (key, name)
            ).fetchone()
        return checkpoint_of(json.loads(row[0])) if row else None

    def add_checkpoint(self, key: int, checkpoint: Checkpoint, events: Sequence[Event]) -> None:
        """Stores a checkpoint. Raises AlreadyExists for a name in use."""
        try:
            with self._transaction() as db:
                db.execute(
                    "INSERT INTO checkpoints (conv, name, at, snapshot) VALUES (%s, %s, %s, %s)",
                    (key, checkpoint.name, checkpoint.at, json.dumps(checkpoint_json(checkpoint))),
                )
                write_events(db, key, events)
        except psycopg.errors.UniqueViolation:
            raise AlreadyExists(f"checkpoint {checkpoint.name!r} already exists") from None

    def commit_restore(
        self, key: int, checkpoint: Checkpoint, now: float, events: Sequence[Event]
    ) -> tuple[int, int]:
        """Puts every item back in its state at the checkpoint, reverts later items and
        undoes later edits and compactions. Returns (items reverted, edits undone)."""
        with self._transaction() as db:
            reverted = db.execute(
                "UPDATE items SET state = %s WHERE conv = %s AND seq > %s AND state != %s",
                (REVERTED, key, checkpoint.last_seq, REVERTED),
            ).rowcount
            for run in checkpoint.states:
                db.execute(
                    "UPDATE items SET state = %s WHERE conv = %s AND seq BETWEEN %s AND %s"
                    " AND state != %s",
                    (int(run.state), key, run.first, run.last, int(run.state)),
                )
            undone = db.execute(
                "UPDATE edits SET undone_at = %s WHERE conv = %s AND id > %s AND undone_at IS NULL",
                (now, key, checkpoint.edit_id),
            ).rowcount
            db.execute(
                "UPDATE compactions SET undone_at = %s WHERE conv = %s AND marker_seq > %s"
                " AND undone_at IS NULL",
                (now, key, checkpoint.last_seq),
            )
            db.execute(
                "UPDATE conversations SET active_start = %s, token_limit = %s, state = %s,"
                " reported_tokens = %s, reported_server_tokens = %s WHERE id = %s",
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
