"""Tests for MainThread: calls from other threads run on the main thread while it serves,
on their own thread otherwise, and none is left waiting when serving stops."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from contextwm.adapters.main_thread import MainThread
from main_thread_serving import serve_while, wait_serving


def test_calls_from_other_threads_run_on_the_main_thread_while_it_serves() -> None:
    main = MainThread()
    ran_on: list[threading.Thread] = []
    results: list[int] = []

    def square(n: int) -> int:
        ran_on.append(threading.current_thread())
        return n * n

    def work() -> None:
        def ask(n: int) -> None:
            results.append(main.call(lambda: square(n)))

        askers = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
        for t in askers:
            t.start()
        for t in askers:
            t.join()

    serve_while(main, work)
    assert sorted(results) == [n * n for n in range(8)]
    assert ran_on == [threading.main_thread()] * 8


def test_an_exception_reaches_the_caller() -> None:
    main = MainThread()
    caught: list[BaseException] = []

    def fail() -> None:
        raise ValueError("bad text")

    def work() -> None:
        with pytest.raises(ValueError, match="bad text") as info:
            main.call(fail)
        caught.append(info.value)

    serve_while(main, work)
    assert len(caught) == 1


def test_without_a_serving_main_thread_a_call_runs_on_its_own_thread() -> None:
    main = MainThread()
    ran_on: list[threading.Thread] = []
    worker = threading.Thread(
        target=lambda: main.call(lambda: ran_on.append(threading.current_thread()))
    )
    worker.start()
    worker.join(10)
    assert ran_on == [worker]
    assert main.call(lambda: 7) == 7  # on the main thread itself: at once


def test_calls_queued_when_serving_stops_are_still_run() -> None:
    main = MainThread()
    stop = threading.Event()
    started = threading.Event()
    release = threading.Event()
    results: list[str] = []

    def slow() -> str:
        started.set()
        release.wait(10)
        return "slow"

    def ask(fn: Callable[[], str]) -> None:
        results.append(main.call(fn))

    first = threading.Thread(target=ask, args=(slow,))
    queued = threading.Thread(target=ask, args=(lambda: "queued",))

    def drive() -> None:
        wait_serving(main)
        first.start()
        assert started.wait(10)
        queued.start()  # waits behind the slow call
        while main._calls.empty():
            threading.Event().wait(0.01)
        stop.set()
        release.set()

    driver = threading.Thread(target=drive)
    driver.start()
    main.serve(stop, poll_seconds=0.05)
    for t in (driver, first, queued):
        t.join(10)
    assert sorted(results) == ["queued", "slow"]
    after: list[threading.Thread] = []
    late = threading.Thread(
        target=lambda: main.call(lambda: after.append(threading.current_thread()))
    )
    late.start()
    late.join(10)
    assert after == [late]  # no longer serving: the caller's own thread


def test_serve_refuses_any_thread_but_the_main_one() -> None:
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            MainThread().serve(threading.Event())
        except RuntimeError as exc:
            errors.append(exc)

    t = threading.Thread(target=serve)
    t.start()
    t.join(10)
    assert len(errors) == 1 and "main thread" in str(errors[0])
