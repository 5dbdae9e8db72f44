"""Open response streams and the keys they run under: a sweep ends those whose key stopped
working (revoked or expired, on this server or any other sharing the store)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from contextwm.access.guard import Guard
from contextwm.domain.errors import Unauthenticated

log = logging.getLogger(__name__)

# How often the sweep asks the store about the keys of open streams.
SWEEP_SECONDS = 1.0


class Ticket:
    """One open stream: ended (with the reason) once its key stops working."""

    def __init__(self, streams: OpenStreams, token: str) -> None:
        self._streams = streams
        self.token = token
        self.reason: str | None = None
        self._closers: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def add_closer(self, close: Callable[[], None]) -> None:
        """Called when the key stops working (at once if it has already)."""
        with self._lock:
            ended = self.reason is not None
            if not ended:
                self._closers.append(close)
        if ended:
            close()

    def end(self, reason: str) -> None:
        with self._lock:
            if self.reason is not None:
                return
            self.reason = reason
            closers, self._closers = self._closers, []
        for close in closers:
            close()

    def check(self) -> None:
        """Raises Unauthenticated once the key stopped working."""
        if self.reason is not None:
            raise Unauthenticated(self.reason)

    def close(self) -> None:
        """The stream ended: no more sweeping for it."""
        self._streams.forget(self)


class OpenStreams:
    """The tickets of open streams, swept every SWEEP_SECONDS by a thread of its own: one
    store read per distinct key, whatever the number of streams."""

    def __init__(self, guard: Guard, sweep_seconds: float = SWEEP_SECONDS) -> None:
        self._guard = guard
        self._sweep_seconds = sweep_seconds
        self._tickets: set[Ticket] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def open(self, token: str) -> Ticket:
        ticket = Ticket(self, token)
        with self._lock:
            self._tickets.add(ticket)
        return ticket

    def forget(self, ticket: Ticket) -> None:
        with self._lock:
            self._tickets.discard(ticket)

    def sweep(self) -> None:
        """Ends every open stream whose key no longer authenticates."""
        with self._lock:
            tickets = list(self._tickets)
        verdicts: dict[str, str | None] = {}
        for ticket in tickets:
            if ticket.token not in verdicts:
                try:
                    self._guard.caller(ticket.token)
                    verdicts[ticket.token] = None
                except Unauthenticated as exc:
                    verdicts[ticket.token] = exc.message
                except Exception:  # the store unreachable: try again at the next sweep
                    log.warning("could not check the API keys of open streams", exc_info=True)
                    return
            reason = verdicts[ticket.token]
            if reason is not None:
                ticket.end(reason)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="contextwm-key-sweep", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._sweep_seconds):
            self.sweep()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
