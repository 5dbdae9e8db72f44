"""Test helper: the test's (main) thread serves a MainThread while work runs on another."""

from __future__ import annotations

import threading
from collections.abc import Callable

from contextwm.adapters.main_thread import MainThread


def wait_serving(main: MainThread) -> None:
    """Until main's serve has begun (a call made earlier runs on its caller's thread)."""
    for _ in range(1000):
        if main._serving:
            return
        threading.Event().wait(0.01)
    raise AssertionError("the main thread never served")


def serve_while(main: MainThread, work: Callable[[], None]) -> None:
    """Serves on this (the main) thread while work runs on another; stops when it ends."""
    stop = threading.Event()
    failures: list[BaseException] = []

    def run() -> None:
        try:
            wait_serving(main)
            work()
        except BaseException as exc:  # re-raised below, on the test's thread
            failures.append(exc)
        finally:
            stop.set()

    worker = threading.Thread(target=run)
    worker.start()
    main.serve(stop, poll_seconds=0.05)
    worker.join(10)
    if failures:
        raise failures[0]
