"""Sign-in to the inspector: a browser that gave a working API key holds a random session id
in a cookie, never the key itself; the key stays in this process's memory until the session
is signed out, idles out, or the server stops."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable

# A session unused this long is forgotten (the person signs in again).
IDLE_SECONDS = 8 * 3600.0


class Sessions:
    """The API key behind each signed-in browser."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens: dict[str, tuple[str, float]] = {}

    def open(self, token: str) -> str:
        """A new session id for a key's token."""
        session = secrets.token_urlsafe(32)
        with self._lock:
            self._forget_idle()
            self._tokens[session] = (token, self._clock())
        return session

    def token(self, session: str) -> str | None:
        """The token of a live session (None: unknown or idled out); using it keeps it live."""
        with self._lock:
            found = self._tokens.get(session)
            if found is None or self._clock() - found[1] > IDLE_SECONDS:
                self._tokens.pop(session, None)
                return None
            self._tokens[session] = (found[0], self._clock())
            return found[0]

    def close(self, session: str) -> None:
        with self._lock:
            self._tokens.pop(session, None)

    def _forget_idle(self) -> None:
        now = self._clock()
        for session in [s for s, (_, used) in self._tokens.items() if now - used > IDLE_SECONDS]:
            del self._tokens[session]
