"""A conversation's workspace session (its view of files) kept in the store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from contextwm.domain.history import Event
from contextwm.domain.workspace_files import SessionState


class SessionStore(Protocol):
    """One session per conversation; durable once a call returns."""

    def session(self, key: int) -> SessionState:
        """The conversation's session; the empty one when it never had one."""
        ...

    def put_session(self, key: int, session: SessionState, events: Sequence[Event]) -> None:
        """Replaces the conversation's session, with the events of the change."""
        ...
