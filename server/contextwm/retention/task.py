"""The background run of retention: every namespace's policy applied at a fixed interval, in
a thread of its own; a failed run is logged and the next one comes as usual."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from contextwm.domain.scope import Scope
from contextwm.ports.exclusive_work import ExclusiveWork
from contextwm.retention.apply import Retention
from contextwm.retention.outcomes import RetentionReport

log = logging.getLogger(__name__)


class RetentionTask:
    """One daemon thread; `start`, then `stop` at shutdown (it ends after the step in hand)."""

    def __init__(
        self,
        retention: Retention,
        interval_seconds: float,
        exclusive: ExclusiveWork,
        on_run: Callable[[RetentionReport], None] | None = None,
    ) -> None:
        """Args:
        retention: what applies the policies.
        interval_seconds: the time from the end of one run to the start of the next (> 0).
        exclusive: where servers sharing the store agree that one of them runs it at a
            time (a run another server is doing is skipped).
        on_run: told of each run that removed something (the audit trail), if given.
        """
        if interval_seconds <= 0:
            raise ValueError(f"interval_seconds must be above 0, got {interval_seconds!r}")
        self._retention = retention
        self._interval = interval_seconds
        self._exclusive = exclusive
        self._on_run = on_run
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="contextwm-retention", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                with self._exclusive.exclusively("retention") as mine:
                    if mine:
                        report = self._retention.apply(
                            Scope(), dry_run=False, stop=self._stop.is_set, keep_going=True
                        )
                        if self._on_run is not None and report.conversations:
                            self._on_run(report)
            except Exception:
                # A full disk, a damaged row: the store stays as the last unit of work left it.
                log.exception("retention run failed; the next one starts in %s s", self._interval)
