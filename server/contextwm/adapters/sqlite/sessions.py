"""Sessions: a conversation's tool states and the file it views, as one JSON document."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from contextwm.adapters.sqlite.database import Database
from contextwm.adapters.sqlite.events import write_events
from contextwm.domain.history import Event
from contextwm.domain.workspace_files import ChunkSpec, ChunkStrategy, FileView, SessionState
from contextwm.ports.session_store import SessionStore


class SessionTables(Database, SessionStore):
    """One row per conversation that has a session; none means the empty session."""

    def session(self, key: int) -> SessionState:
        row = self._reader().execute("SELECT doc FROM sessions WHERE conv = ?", (key,)).fetchone()
        return _session_of(json.loads(row[0])) if row else SessionState()

    def put_session(self, key: int, session: SessionState, events: Sequence[Event]) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO sessions (conv, doc) VALUES (?, ?)",
                (key, json.dumps(_session_json(session))),
            )
            write_events(db, key, events)


def _session_json(session: SessionState) -> dict[str, Any]:
    doc: dict[str, Any] = {"states": list(session.states)}
    if (view := session.view) is not None:
        spec = view.spec
        doc["view"] = {
            "path": view.path,
            "strategy": spec.strategy.value,
            "max_lines": spec.max_lines,
            "max_tokens": spec.max_tokens,
            "encoding": spec.encoding,
            "chunk_index": view.chunk_index,
            "total_chunks": view.total_chunks,
            "seen": list(view.seen),
            "sha256": view.sha256,
        }
    return doc


def _session_of(doc: dict[str, Any]) -> SessionState:
    view = None
    if (v := doc.get("view")) is not None:
        spec = ChunkSpec(
            ChunkStrategy(v["strategy"]), v["max_lines"], v["max_tokens"], v["encoding"]
        )
        view = FileView(
            v["path"], spec, v["chunk_index"], v["total_chunks"], tuple(v["seen"]), v["sha256"]
        )
    return SessionState(tuple(doc.get("states", ())), view)
