"""Sessions: a conversation's tool states and the file it views, as one JSON document."""

from __future__ import annotations

import json
from collections.abc import Sequence

from contextwm.adapters.postgres.database import Database
from contextwm.adapters.postgres.events import write_events
from contextwm.adapters.session_rows import session_json, session_of
from contextwm.domain.history import Event
from contextwm.domain.workspace_files import SessionState
from contextwm.ports.session_store import SessionStore


class SessionTables(Database, SessionStore):
    """One row per conversation that has a session; none means the empty session."""

    def session(self, key: int) -> SessionState:
        with self._read() as db:
            row = db.execute("SELECT doc FROM sessions WHERE conv = %s", (key,)).fetchone()
        return session_of(json.loads(row[0])) if row else SessionState()

    def put_session(self, key: int, session: SessionState, events: Sequence[Event]) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT INTO sessions (conv, doc) VALUES (%s, %s)"
                " ON CONFLICT (conv) DO UPDATE SET doc = excluded.doc",
                (key, json.dumps(session_json(session))),
            )
            write_events(db, key, events)
