"""Tool availability per conversation: the session states a client sets, and the tools the
rules allow in them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from contextwm.domain.errors import InvalidArgument
from contextwm.domain.workspace_files import (
    SessionState,
    ToolAvailability,
    ToolCheck,
    ToolRules,
)
from contextwm.tool_availability.rules import available_tools, check_state, check_tool
from contextwm.workspace_files.sessions import Sessions


class ToolSessions:
    """Sets and reads conversations' session states, and answers with the tools allowed."""

    def __init__(self, sessions: Sessions, rules: ToolRules) -> None:
        self._sessions = sessions
        self._rules = rules

    def get(self, namespace: str, conversation_id: str) -> tuple[SessionState, ToolAvailability]:
        """Raises NotFound for a conversation that does not exist."""
        session = self._sessions.get(namespace, conversation_id)
        return session, available_tools(self._rules, session.states)

    def set_states(
        self,
        namespace: str,
        conversation_id: str,
        set_states: Sequence[str] = (),
        clear: Sequence[str] = (),
        clear_all: bool = False,
    ) -> tuple[SessionState, ToolAvailability]:
        """Clears (all, or those named), then sets; setting a set state keeps its place.

        Raises:
            InvalidArgument: a malformed state, or one the rules do not know.
            NotFound: no such conversation.
        """
        for name in (*set_states, *clear):
            self._check_known(name)

        def update(session: SessionState) -> SessionState:
            kept = [] if clear_all else [s for s in session.states if s not in clear]
            kept += [s for s in dict.fromkeys(set_states) if s not in kept]
            return dataclasses.replace(session, states=tuple(kept))

        session = self._sessions.change(namespace, conversation_id, update)
        return session, available_tools(self._rules, session.states)

    def check(self, namespace: str, conversation_id: str, tool: str) -> ToolCheck:
        """Raises InvalidArgument for an empty tool name, NotFound for no conversation."""
        if not tool:
            raise InvalidArgument("tool must be a tool's name, e.g. edit_files")
        session = self._sessions.get(namespace, conversation_id)
        return check_tool(self._rules, session.states, tool)

    def _check_known(self, name: str) -> None:
        check_state(name)
        if name not in self._rules.restrictions:
            known = ", ".join(self._rules.restrictions) or "none"
            raise InvalidArgument(
                f"unknown session state {name!r}; the states are: {known}"
                " (custom states are configured under [context_window.tool_restrictions])"
            )
