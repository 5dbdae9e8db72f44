"""Tests for the indexer child's embedding threads: low priority, and an urgent batch helped
by the thread at full priority."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from contextwm.adapters.embedder_onnx import OnnxEmbedder, Pass
from contextwm.adapters.embedding_lanes import PriorityLanes
from contextwm.ports.embedder import Embedder, Vectors

TEXTS = [f"turn {n}: the deploy of service {n % 7} was rolled back" for n in range(70)]


class Recording:
    """Passes of one text each, whose vector is the text's number; records the thread of
    each pass, and holds low-priority threads while `held` is set."""

    dimension = 2

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.held = threading.Event()
        self.release = threading.Event()
        self.fail = False

    def passes(self, texts: Sequence[str], size: int) -> list[Pass]:
        none = np.zeros((1, 1), dtype=np.int64)
        return [Pass([n], none, none, none) for n in range(len(texts))]

    def run(self, p: Pass) -> Vectors:
        name = threading.current_thread().name
        self.threads.append(name)
        if self.fail:
            raise RuntimeError("the model failed")
        if self.held.is_set() and "low" in name:
            self.release.wait(30)
        return np.array([[p.rows[0], 1.0]], dtype=np.float32)


@pytest.fixture
def recording() -> Iterator[tuple[Recording, PriorityLanes]]:
    model = Recording()
    lanes = PriorityLanes(model, threads=2, niceness=5)  # type: ignore[arg-type]
    yield model, lanes
    model.release.set()
    lanes.close()


def test_vectors_are_the_engine_s_own(embedder: Embedder) -> None:
    single = OnnxEmbedder(threads=1)
    lanes = PriorityLanes(single, threads=2, niceness=5)
    try:
        expected = embedder.embed(TEXTS)
        np.testing.assert_allclose(lanes.embed(TEXTS), expected, atol=1e-5)
        np.testing.assert_allclose(lanes.embed(TEXTS, urgent=True), expected, atol=1e-5)
        assert lanes.embed([]).shape == (0, embedder.dimension)
    finally:
        lanes.close()


def test_low_threads_are_niced_and_the_urgent_one_is_not(
    recording: tuple[Recording, PriorityLanes],
) -> None:
    _, lanes = recording
    ours = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    nice = {t.name: os.getpriority(os.PRIO_PROCESS, t.native_id or 0) for t in lanes._workers}
    assert nice == {
        "contextwm-embed-low-0": ours + 5,
        "contextwm-embed-low-1": ours + 5,
        "contextwm-embed-urgent": ours,
    }


def test_a_batch_that_is_not_urgent_stays_on_the_low_threads(
    recording: tuple[Recording, PriorityLanes],
) -> None:
    model, lanes = recording
    vectors = lanes.embed(TEXTS)
    assert vectors[:, 0].tolist() == list(range(len(TEXTS)))
    assert len(model.threads) == len(TEXTS)
    assert not any("urgent" in name for name in model.threads)


def test_an_urgent_batch_goes_on_while_the_low_threads_are_held(
    recording: tuple[Recording, PriorityLanes],
) -> None:
    model, lanes = recording
    model.held.set()
    done: list[Vectors] = []
    worker = threading.Thread(target=lambda: done.append(lanes.embed(TEXTS, urgent=True)))
    worker.start()
    # Each low thread holds one pass; the urgent thread embeds all the others meanwhile.
    while model.threads.count("contextwm-embed-urgent") < len(TEXTS) - 2:
        assert worker.is_alive() or done
        worker.join(0.01)
    model.release.set()
    worker.join(30)
    assert done and done[0][:, 0].tolist() == list(range(len(TEXTS)))


def test_a_failed_pass_fails_the_batch(recording: tuple[Recording, PriorityLanes]) -> None:
    model, lanes = recording
    model.fail = True
    with pytest.raises(RuntimeError, match="the model failed"):
        lanes.embed(TEXTS)
    model.fail = False
    assert lanes.embed(TEXTS[:3]).shape == (3, 2)
