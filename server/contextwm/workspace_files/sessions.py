"""A conversation's session (the states that decide its tools, the file it views), read and
changed through the conversation's unit of work so that it survives restarts."""

from __future__ import annotations

from collections.abc import Callable

from contextwm.conversations.engine import ContextEngine
from contextwm.domain.workspace_files import SessionState
from contextwm.ports.session_store import SessionStore


class Sessions:
    """Reads and changes sessions; a change holds its conversation's lock."""

    def __init__(self, engine: ContextEngine) -> None:
        self._engine = engine
        self._store: SessionStore = engine.store

    def get(self, namespace: str, conversation_id: str) -> SessionState:
        """Raises NotFound for a conversation that does not exist."""
        with self._engine.holding(namespace, conversation_id) as rt:
            return self._store.session(rt.key)

    def change(
        self,
        namespace: str,
        conversation_id: str,
        update: Callable[[SessionState], SessionState],
    ) -> SessionState:
        """Applies update to the stored session and stores what it returns, atomically with
        respect to other changes of the conversation. update may raise to change nothing.

        Raises:
            NotFound: no such conversation.
        """
        engine = self._engine
        with engine.change(namespace, conversation_id) as change:
            key = change.rt.key
            new = update(self._store.session(key))
            change.commit(lambda events: self._store.put_session(key, new, events))
        return new
