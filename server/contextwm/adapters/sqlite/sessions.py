"""Sessions: a conversation's tool states and the file it views, as one JSON document."""

from __future__ import annotations

import json
from collections.abc import Sequence

from contextwm.adapters.session_rows import session_json, session_of
from contextwm.adapters.sqlite.database import Database
from contextwm.adapters.sqlite.events import write_events
from contextwm.domain.history import Event
from contextwm.domain.workspace_files import SessionState
from contextwm.ports.session_store import SessionStore


class SessionTables(Database, SessionStore):
    """One row per conversation that has a session; none means the empty session."""

    def session(self, key: int) -> SessionState:
        row = self._reader().execute("SELECT doc FROM sessions WHERE conv = ?", (key,)).fetchone()
        return session_of(json.loads(row[0])) if row else SessionState()

    def put_session(self, key: int, session: SessionState, events: Sequence[Event]) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO sessions (conv, doc) VALUES (?, ?)",
                (key, json.dumps(session_json(session))),
            )
            write_events(db, key, events)
