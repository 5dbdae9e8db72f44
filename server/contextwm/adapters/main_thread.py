"""Runs calls from any thread on the process's main thread, while that thread serves them."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")


class MainThread:
    """Calls that the process's main thread runs while it waits for shutdown.

    torch's OpenMP runs a parallel region much faster from the process's first thread than
    from any other: one query embedded with two threads took 6 ms there and 12 ms on a worker
    thread (9 ms with one thread on either). `contextwm serve` lends its otherwise idle main
    thread to query embedding through this. Before `serve` starts and once it has returned,
    `call` runs the function on the caller's own thread, so nothing waits on a main thread
    that is not serving.
    """

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._serving = False

    def call(self, fn: Callable[[], T]) -> T:
        """fn's result (or its exception), computed on the main thread while it serves,
        otherwise on this thread."""
        if threading.current_thread() is not threading.main_thread():
            future: Future[T] = Future()
            with self._lock:
                queued = self._serving
                if queued:
                    self._calls.put((fn, future))
            if queued:
                return future.result()
        return fn()

    def serve(self, stop: threading.Event, poll_seconds: float = 0.5) -> None:
        """Runs calls on this (the main) thread until stop is set, then the calls still queued.

        stop is looked at every poll_seconds at least: Python runs a signal handler only when
        the main thread gets back to bytecode, so a handler that sets stop is seen in time.
        """
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("MainThread.serve must run on the process's main thread")
        with self._lock:
            self._serving = True
        try:
            while not stop.is_set():
                try:
                    fn, future = self._calls.get(timeout=poll_seconds)
                except queue.Empty:
                    continue
                _run(fn, future)
        finally:
            with self._lock:
                self._serving = False
            # Nothing is queued after this point (call checks _serving under the lock).
            while True:
                try:
                    fn, future = self._calls.get_nowait()
                except queue.Empty:
                    break
                _run(fn, future)


def _run(fn: Callable[[], Any], future: Future[Any]) -> None:
    try:
        future.set_result(fn())
    except BaseException as exc:  # handed to the caller, whatever it is
        future.set_exception(exc)
