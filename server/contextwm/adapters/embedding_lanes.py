"""The indexer's batches on threads of two priorities, in its child process.

A batch runs at low priority, so that requests get the CPU first. But a low-priority batch
gets almost nothing while other processes keep both cores busy, and the backlog then grows
without end. An unprivileged process cannot raise its priority once it has lowered it; on
Linux a thread's niceness is its own, though, so the child keeps one thread at the server's
priority for urgent batches (a reader waits for them, or the backlog has waited long) beside
low-priority ones. Each thread runs whole forward passes on one ONNX thread, taking them
from the batch as it frees up, so a thread that a busy core holds back never delays the rest.
"""

from __future__ import annotations

import math
import os
import queue
import sys
import threading
from collections.abc import Sequence

import numpy as np

from contextwm.adapters.embedder_onnx import OnnxEmbedder, Pass
from contextwm.ports.embedder import Vectors

# Texts per pass: small enough that every thread gets some of a 32-text batch, large enough
# that a pass's fixed cost stays small.
MIN_PASS = 8
MAX_PASS = 64


class _Batch:
    """One embed call's passes, taken by whichever thread is free."""

    def __init__(self, passes: list[Pass], dimension: int, size: int) -> None:
        self.todo: queue.SimpleQueue[Pass] = queue.SimpleQueue()
        for p in passes:
            self.todo.put(p)
        self.out = np.zeros((size, dimension), dtype=np.float32)
        self.left = len(passes)
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._lock = threading.Lock()

    def work(self, embedder: OnnxEmbedder) -> None:
        while not self.done.is_set():
            try:
                p = self.todo.get_nowait()
            except queue.Empty:
                return
            try:
                vectors = embedder.run(p)
            except BaseException as exc:  # handed to the caller, who reports it
                self.error = exc
                self.done.set()
                return
            with self._lock:
                self.out[p.rows] = vectors
                self.left -= 1
                if self.left == 0:
                    self.done.set()


class PriorityLanes:
    """Embeds batches on `threads` threads at `niceness` above the process's, plus one at the
    process's own priority that helps with urgent batches only. One batch at a time."""

    def __init__(self, embedder: OnnxEmbedder, *, threads: int, niceness: int) -> None:
        """embedder: runs one pass on one thread (made with threads=1)."""
        self._embedder = embedder
        self._threads = max(1, threads)
        self._low: list[queue.SimpleQueue[_Batch | None]] = []
        self._urgent: queue.SimpleQueue[_Batch | None] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        started: list[threading.Event] = []
        for n in range(self._threads):
            inbox: queue.SimpleQueue[_Batch | None] = queue.SimpleQueue()
            self._low.append(inbox)
            started.append(self._start(f"low-{n}", inbox, niceness))
        started.append(self._start("urgent", self._urgent, 0))
        for event in started:
            event.wait()

    def _start(
        self, name: str, inbox: queue.SimpleQueue[_Batch | None], niceness: int
    ) -> threading.Event:
        started = threading.Event()

        def serve() -> None:
            lower_own_priority(niceness)
            started.set()
            while (batch := inbox.get()) is not None:
                batch.work(self._embedder)

        thread = threading.Thread(target=serve, name=f"contextwm-embed-{name}", daemon=True)
        thread.start()
        self._workers.append(thread)
        return started

    def embed(self, texts: Sequence[str], *, urgent: bool = False) -> Vectors:
        """The texts' vectors; an urgent batch also runs on the full-priority thread."""
        if not texts:
            return np.zeros((0, self._embedder.dimension), dtype=np.float32)
        helpers = self._threads + (1 if urgent else 0)
        size = min(MAX_PASS, max(MIN_PASS, math.ceil(len(texts) / helpers)))
        batch = _Batch(self._embedder.passes(texts, size), self._embedder.dimension, len(texts))
        for inbox in self._low:
            inbox.put(batch)
        if urgent:
            self._urgent.put(batch)
        batch.done.wait()
        if batch.error is not None:
            raise batch.error
        return batch.out

    def close(self) -> None:
        for inbox in [*self._low, self._urgent]:
            inbox.put(None)
        for thread in self._workers:
            thread.join(5.0)


# Where a thread's niceness is its own (elsewhere setpriority would lower the whole process).
SUPPORTED = sys.platform == "linux"


def lower_own_priority(niceness: int) -> None:
    """Lowers the calling thread's priority by niceness (Linux only: see SUPPORTED)."""
    if niceness > 0:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + niceness)
