"""Tests for the priority pool: low-priority threads, and urgent work helped by the thread at
full priority; and the ONNX engine's batches on it."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import numpy as np
import pytest
from contextwm.adapters.embedder_onnx import OnnxEmbedder
from contextwm.adapters.priority_pool import PriorityPool
from contextwm.ports.embedder import Embedder

TEXTS = [f"turn {n}: the deploy of service {n % 7} was rolled back" for n in range(70)]


class Recording:
    """A job function: returns its job doubled, records each job's thread, and holds the
    low-priority threads while `held` is set."""

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.held = threading.Event()
        self.release = threading.Event()
        self.fail = False

    def __call__(self, job: int) -> int:
        name = threading.current_thread().name
        self.threads.append(name)
        if self.fail:
            raise RuntimeError("the job failed")
        if self.held.is_set() and "low" in name:
            self.release.wait(30)
        return 2 * job


@pytest.fixture
def pool() -> Iterator[PriorityPool]:
    pool = PriorityPool(threads=2, niceness=5, name="p")
    yield pool
    pool.close()


def test_low_threads_are_niced_and_the_urgent_one_is_not(pool: PriorityPool) -> None:
    ours = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    nice = {t.name: os.getpriority(os.PRIO_PROCESS, t.native_id or 0) for t in pool.workers}
    assert nice == {"p-low-0": ours + 5, "p-low-1": ours + 5, "p-urgent": ours}


def test_work_that_is_not_urgent_stays_on_the_low_threads(pool: PriorityPool) -> None:
    fn = Recording()
    assert pool.map(fn, list(range(50))) == [2 * n for n in range(50)]
    assert len(fn.threads) == 50 and set(fn.threads) <= {"p-low-0", "p-low-1"}
    assert pool.map(fn, []) == []


def test_urgent_work_goes_on_while_the_low_threads_are_held(pool: PriorityPool) -> None:
    fn = Recording()
    fn.held.set()
    done: list[list[int]] = []
    worker = threading.Thread(
        target=lambda: done.append(pool.map(fn, list(range(50)), urgent=True))
    )
    worker.start()
    # Each low thread holds one job; the urgent thread does all the others meanwhile.
    while fn.threads.count("p-urgent") < 48:
        assert worker.is_alive()
        worker.join(0.01)
    fn.release.set()
    worker.join(30)
    assert done == [[2 * n for n in range(50)]]


def test_a_failed_job_fails_the_map_and_the_pool_goes_on(pool: PriorityPool) -> None:
    fn = Recording()
    fn.fail = True
    with pytest.raises(RuntimeError, match="the job failed"):
        pool.map(fn, list(range(10)))
    fn.fail = False
    assert pool.map(fn, [1, 2, 3]) == [2, 4, 6]


def test_the_engine_s_batches_give_its_query_vectors(embedder: Embedder) -> None:
    onnx = OnnxEmbedder(niceness=5)
    expected = np.vstack([embedder.embed([t]) for t in TEXTS[:6]])
    np.testing.assert_allclose(onnx.embed_batch(TEXTS[:6]), expected, atol=1e-5)
    np.testing.assert_allclose(onnx.embed_batch(TEXTS[:6], urgent=True), expected, atol=1e-5)
    assert onnx.embed_batch([]).shape == (0, embedder.dimension)
    assert onnx.embed(TEXTS).shape == (len(TEXTS), embedder.dimension)
