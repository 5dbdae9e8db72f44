"""A conversation's session (tool states, the file it views) as the JSON document both
stores keep."""

from __future__ import annotations

from typing import Any

from contextwm.domain.workspace_files import ChunkSpec, ChunkStrategy, FileView, SessionState


def session_json(session: SessionState) -> dict[str, Any]:
    """The session as the JSON document both stores keep."""
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


def session_of(doc: dict[str, Any]) -> SessionState:
    """The session a stored JSON document holds."""
    view = None
    if (v := doc.get("view")) is not None:
        spec = ChunkSpec(
            ChunkStrategy(v["strategy"]), v["max_lines"], v["max_tokens"], v["encoding"]
        )
        view = FileView(
            v["path"], spec, v["chunk_index"], v["total_chunks"], tuple(v["seen"]), v["sha256"]
        )
    return SessionState(tuple(doc.get("states", ())), view)
