"""One re-embed at a time: the run in progress, a new run refused while it goes on (or waiting
for one whose caller went away to stop), and shutdown."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from contextwm.domain.errors import FailedPrecondition, Unavailable
from contextwm.domain.scope import Scope
from contextwm.reembedding.progress import Tally

# How long a new run waits for one whose caller went away to finish its batch in hand (a
# batch takes seconds; the last step of a conversation rebuilds its index, longer when big).
STOP_WAIT_SECONDS = 60.0

RESUMES = "a new run resumes where the last one stopped"


class Run:
    """A re-embed in progress. It stops after the batch in hand once its caller cancels
    (`cancelled` is set) or the server shuts down."""

    def __init__(self, scope: Scope, cancelled: threading.Event) -> None:
        self.scope = scope
        self.cancelled = cancelled
        self.shutting_down = False
        self.started = time.monotonic()
        self.tally: Tally | None = None

    @property
    def stopping(self) -> bool:
        return self.shutting_down or self.cancelled.is_set()

    def should_stop(self) -> bool:
        """Whether to stop now (between batches).

        Raises:
            Unavailable: the server is shutting down (the caller is told to run it again).
        """
        if self.shutting_down:
            raise Unavailable(f"the server is shutting down; run the re-embed again: {RESUMES}")
        return self.cancelled.is_set()

    def busy_message(self) -> str:
        done = ""
        if self.tally is not None:
            done = f", {self.tally.items_done} of {self.tally.items_total} items embedded"
        return (
            f"a re-embed is already running ({self.scope.describe()}, started"
            f" {time.monotonic() - self.started:.0f} s ago{done}); wait for it to finish, or"
            f" cancel it and run again: {RESUMES}"
        )


class Runs:
    """Admits one run at a time. Thread-safe."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._current: Run | None = None
        self._closed = False

    @contextmanager
    def running(self, run: Run) -> Iterator[None]:
        """Holds the one place for run while the block runs.

        Raises:
            FailedPrecondition: another run is in progress (one whose caller went away is
                waited for first: it stops after its batch in hand).
            Unavailable: the server is shutting down.
        """
        with self._changed:
            if self._current is not None and self._current.stopping:
                self._changed.wait_for(lambda: self._current is None, STOP_WAIT_SECONDS)
            if self._closed:
                raise Unavailable(f"the server is shutting down; run the re-embed again: {RESUMES}")
            if self._current is not None:
                raise FailedPrecondition(self._current.busy_message())
            self._current = run
        try:
            yield
        finally:
            with self._changed:
                self._current = None
                self._changed.notify_all()

    def stop(self, timeout: float = STOP_WAIT_SECONDS) -> None:
        """Shutdown: refuses new runs, and waits (up to timeout) for the running one to stop
        after its batch in hand."""
        with self._changed:
            self._closed = True
            if self._current is not None:
                self._current.shutting_down = True
                self._changed.wait_for(lambda: self._current is None, timeout)
