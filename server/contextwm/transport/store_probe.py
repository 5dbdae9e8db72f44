"""Readiness that follows the store: a thread asks the store every second whether it answers,
and health reports NOT_SERVING while it does not (a PostgreSQL restart), SERVING once it is
back."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from contextwm.ports.store_lifecycle import StoreLifecycle

log = logging.getLogger(__name__)

PROBE_SECONDS = 1.0


class StoreProbe:
    """One daemon thread; `start`, then `stop` at shutdown (before the server stops, so that
    it never reports SERVING again once shutdown began)."""

    def __init__(
        self,
        store: StoreLifecycle,
        set_ready: Callable[[bool], None],
        interval_seconds: float = PROBE_SECONDS,
    ) -> None:
        self._store = store
        self._set_ready = set_ready
        self._interval = interval_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="contextwm-store-probe", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        ready = True
        while not self._stop.wait(self._interval):
            now = self._store.reachable()
            if now != ready and not self._stop.is_set():
                ready = now
                if ready:
                    log.info("the store answers again: ready")
                else:
                    log.warning("the store cannot be reached: not ready until it answers")
                self._set_ready(ready)
