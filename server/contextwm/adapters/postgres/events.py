"""A conversation's events, kept for replay to watchers and pruned by age."""

from __future__ import annotations

import json
from collections.abc import Sequence

import psycopg

from contextwm.adapters.history_rows import decode_payload, encode_payload
from contextwm.adapters.postgres.database import Database
from contextwm.domain.history import Event, EventKind
from contextwm.ports.event_store import EventStore

# The channel on which every write of events is announced to the servers sharing the
# database (see feed.py), as "<conversation key> <last event number>".
CHANNEL = "contextwm_events"
# The channel on which an erasure or a deleted conversation is announced, as "<conversation
# key>": the servers sharing the database drop what their memory and index files hold of the
# conversation's vectors.
ERASURE_CHANNEL = "contextwm_erasures"


def write_events(
    db: psycopg.Connection, key: int, events: Sequence[Event], *, counter: bool = True
) -> None:
    """Stores events, and announces them on CHANNEL; counter=False when the caller updates
    conversations.last_event."""
    if not events:
        return
    # The announcement in the writing transaction: PostgreSQL delivers it when that commits,
    # and drops it when it rolls back, so listeners only hear of events they can read.
    db.execute(
        "WITH added AS (INSERT INTO events (conv, number, at, kind, payload)"
        " SELECT %s, * FROM unnest(%s::bigint[], %s::float8[], %s::text[], %s::text[]))"
        " SELECT pg_notify(%s, %s)",
        (
            key,
            [e.number for e in events],
            [e.at for e in events],
            [str(e.kind) for e in events],
            [json.dumps(encode_payload(e.payload)) for e in events],
            CHANNEL,
            f"{key} {events[-1].number}",
        ),
    )
    if counter:
        db.execute(
            "UPDATE conversations SET last_event = %s WHERE id = %s", (events[-1].number, key)
        )


class EventTables(Database, EventStore):
    """A conversation's events, kept for replay to watchers and pruned by age."""

    def events_after(self, key: int, after: int, limit: int) -> list[Event]:
        with self._read() as db:
            rows = db.execute(
                "SELECT number, at, kind, payload FROM events WHERE conv = %s AND number > %s"
                " ORDER BY number LIMIT %s",
                (key, after, limit),
            ).fetchall()
        return [
            Event(r[0], r[1], EventKind(r[2]), decode_payload(EventKind(r[2]), json.loads(r[3])))
            for r in rows
        ]

    def first_event_number(self, key: int) -> int | None:
        with self._read() as db:
            row = db.execute("SELECT min(number) FROM events WHERE conv = %s", (key,)).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else None

    def record_events(self, key: int, events: Sequence[Event]) -> None:
        with self._transaction() as db:
            write_events(db, key, events)

    def prune_events(self, older_than: float) -> int:
        """Drops events older than the retention; returns how many."""
        with self._transaction() as db:
            return db.execute("DELETE FROM events WHERE at < %s", (older_than,)).rowcount
