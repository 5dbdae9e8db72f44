"""A thread pool whose threads run at a lower priority than the process, beside one at the
process's own priority that helps with urgent work only.

Background work (the indexer's batches) runs at low priority, so that requests get the CPU
first. But low-priority work gets almost nothing while other processes keep every core
busy, and a backlog then grows without end. An unprivileged process cannot raise its
priority once it has lowered it; on Linux a thread's niceness is its own, though, so the
pool keeps one thread at full priority for urgent work. Jobs are taken by whichever thread
is free, so a thread that a busy core holds back never holds up the rest.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Where a thread's niceness is its own (elsewhere setpriority would lower the whole process).
SUPPORTED = sys.platform == "linux"


class _Map(Generic[T, R]):
    """One map call's jobs, taken by whichever thread is free."""

    def __init__(self, jobs: Sequence[T], fn: Callable[[T], R]) -> None:
        self.todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for n in range(len(jobs)):
            self.todo.put(n)
        self.jobs, self.fn = jobs, fn
        self.results: list[R | None] = [None] * len(jobs)
        self.left = len(jobs)
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._lock = threading.Lock()

    def work(self) -> None:
        while not self.done.is_set():
            try:
                n = self.todo.get_nowait()
            except queue.Empty:
                return
            try:
                result = self.fn(self.jobs[n])
            except BaseException as exc:  # handed to the caller
                self.error = exc
                self.done.set()
                return
            with self._lock:
                self.results[n] = result
                self.left -= 1
                if self.left == 0:
                    self.done.set()


class PriorityPool:
    """`threads` threads at `niceness` below the process's priority, plus one at its own
    priority for urgent maps. Thread-safe; maps run one at a time."""

    def __init__(self, *, threads: int, niceness: int, name: str = "contextwm-pool") -> None:
        """Raises OSError where threads have no priority of their own (see SUPPORTED)
        and niceness > 0."""
        if niceness > 0 and not SUPPORTED:
            raise OSError(f"threads have no priority of their own on {sys.platform}")
        self._lock = threading.Lock()
        self._low: list[queue.SimpleQueue[_Map[object, object] | None]] = []
        self._urgent: queue.SimpleQueue[_Map[object, object] | None] = queue.SimpleQueue()
        self.workers: list[threading.Thread] = []
        started = [self._start(f"{name}-low-{n}", niceness) for n in range(max(1, threads))]
        started.append(self._start(f"{name}-urgent", 0, self._urgent))
        for event in started:
            event.wait()

    def _start(
        self,
        name: str,
        niceness: int,
        inbox: queue.SimpleQueue[_Map[object, object] | None] | None = None,
    ) -> threading.Event:
        if inbox is None:
            inbox = queue.SimpleQueue()
            self._low.append(inbox)
        started = threading.Event()

        def serve() -> None:
            _lower_own_priority(niceness)
            started.set()
            while (job := inbox.get()) is not None:
                job.work()

        thread = threading.Thread(target=serve, name=name, daemon=True)
        thread.start()
        self.workers.append(thread)
        return started

    def map(self, fn: Callable[[T], R], jobs: Sequence[T], *, urgent: bool = False) -> list[R]:
        """fn of each job, in order, on the low-priority threads, and on the full-priority
        one too when urgent. Raises what the first failed job raised."""
        if not jobs:
            return []
        job: _Map[T, R] = _Map(jobs, fn)
        shared: _Map[object, object] = job  # type: ignore[assignment]
        with self._lock:
            for inbox in self._low:
                inbox.put(shared)
            if urgent:
                self._urgent.put(shared)
            job.done.wait()
        if job.error is not None:
            raise job.error
        return job.results  # type: ignore[return-value]

    def close(self) -> None:
        for inbox in [*self._low, self._urgent]:
            inbox.put(None)
        for thread in self.workers:
            thread.join(5.0)


def _lower_own_priority(niceness: int) -> None:
    if niceness > 0:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + niceness)
