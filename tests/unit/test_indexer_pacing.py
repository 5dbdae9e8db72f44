"""The indexer yields to bursts of appends, and never to a reader waiting for vectors (a real
engine on SQLite with the hashing embedder; the end-to-end case is in test_e2e_archive.py)."""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from contextwm.adapters.embedder_fake import HashingEmbedder
from contextwm.conversations.activity import BusyMeter
from contextwm.conversations.engine import ContextEngine
from contextwm.domain.items import NewItem
from contextwm.indexing.indexer import PACE_SLICE_SECONDS, Indexer
from contextwm.indexing.pacing import DRAIN_BATCH, next_batch_size, pause_after
from contextwm.ports.embedder import Vectors
from hashing_engine import hashing_engine


def test_pause_after() -> None:
    assert pause_after(0.4, 0.1, 0.25) == 0.0  # appends took a quarter of the batch: not busy
    assert pause_after(0.4, 0.2, 0.25) == pytest.approx(1.2)  # busy: embed a quarter of the time
    assert pause_after(0.4, 0.8, 0.5) == pytest.approx(0.4)
    assert pause_after(0.4, 4.0, 1.0) == 0.0  # duty 1 never holds back
    assert pause_after(0.0, 1.0, 0.25) == 0.0


def test_next_batch_size() -> None:
    assert next_batch_size(32, 0.4, 0.2) == 32  # appends kept the server busy: stay small
    assert next_batch_size(32, 0.4, 0.1) == DRAIN_BATCH  # a backlog on a quiet server
    assert next_batch_size(500, 0.4, 0.0) == 500  # a larger configured batch stays


def test_busy_meter_sums_the_time_of_concurrent_calls() -> None:
    meter = BusyMeter()

    def call() -> None:
        with meter.timing():
            time.sleep(0.5)  # ample to overlap, however slowly a busy machine starts threads

    threads = [threading.Thread(target=call) for _ in range(4)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    assert meter.seconds >= 2.0 > wall


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[ContextEngine]:
    with hashing_engine(tmp_path) as engine:
        yield engine


class Burst:
    """Appends from threads without a break, as producers in a burst do.

    Several, appending small batches: the pause counts the time of appends that ended, so on
    a loaded machine one producer's long append (or its being descheduled between two) can
    leave a slice of the pause without any, which ends it; with several, the others' appends
    fill that slice.
    """

    def __init__(self, engine: ContextEngine, producers: int = 3) -> None:
        self._stop = threading.Event()
        self._going = [threading.Event() for _ in range(producers)]
        self._engine = engine
        self._threads = [threading.Thread(target=self._run, args=(p,)) for p in range(producers)]

    def _run(self, producer: int) -> None:
        n = 0
        while not self._stop.is_set():
            batch = [NewItem(role="user", content=f"note {n + k}") for k in range(5)]
            n += len(batch)
            self._engine.append("", f"burst-{producer}", batch)
            self._going[producer].set()

    def __enter__(self) -> Burst:
        for thread in self._threads:
            thread.start()
        for going in self._going:
            going.wait()  # the first append also loads the token tables
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()


def _burst_pause(directory: str) -> float:
    """The pause after a batch while a burst of appends runs, in a process of its own: the
    measure is the share of time the burst's threads spend appending, which threads left over
    from other tests (servers, indexers, embedders) would take from it."""
    with hashing_engine(Path(directory)) as engine:
        indexer = Indexer(engine, busy_duty=0.1)
        with Burst(engine):
            return indexer.pace(batch_seconds=0.1, append_seconds=0.1)  # pause_after: 0.9 s


def test_a_burst_of_appends_holds_the_indexer_back(tmp_path: Path) -> None:
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        paused = pool.submit(_burst_pause, str(tmp_path)).result(timeout=120)
    assert 0.8 <= paused < 3.0


def test_the_pause_ends_with_the_burst(engine: ContextEngine) -> None:
    indexer = Indexer(engine, busy_duty=0.01)
    paused = indexer.pace(batch_seconds=0.1, append_seconds=0.1)  # pause_after: 9.9 s
    assert paused < 0.5  # no append since: the first check ends it


def test_a_reader_waiting_for_vectors_ends_the_pause(engine: ContextEngine) -> None:
    indexer = Indexer(engine, busy_duty=0.01)
    came: list[float] = []

    def reader() -> None:
        time.sleep(0.3)
        came.append(time.monotonic())
        with engine.vector_waiters.waiting(0):
            time.sleep(0.5)

    thread = threading.Thread(target=reader)
    with Burst(engine):
        thread.start()
        indexer.pace(batch_seconds=0.1, append_seconds=0.1)  # pause_after: 9.9 s
        ended = time.monotonic()
    thread.join()
    # The burst held the indexer back until the reader came, then the reader ended the pause
    # (timed from the reader's coming: a busy machine may start its thread late).
    assert came and came[0] <= ended < came[0] + 2.0
    # A reader already waiting means no pause at all: not even the first slice of one.
    with Burst(engine), engine.vector_waiters.waiting(0):
        assert indexer.pace(batch_seconds=0.1, append_seconds=0.1) < PACE_SLICE_SECONDS


def test_a_waiting_reader_has_its_conversation_embedded_before_the_backlog(
    engine: ContextEngine,
) -> None:
    engine.append("", "backlog", [NewItem("user", f"old turn {n}") for n in range(100)])
    engine.append("", "asked", [NewItem("user", "the turn a reader waits for")])
    indexer = Indexer(engine, batch_size=8)
    asked = engine.runtime("", "asked")
    with engine.vector_waiters.waiting(asked.key):
        assert indexer.run_once() == 1  # the waited-for item alone, not 8 of the backlog
    assert asked.pending == 0
    assert engine.runtime("", "backlog").pending == 100
    # Then the backlog in order, skipping nothing.
    while indexer.run_once():
        pass
    assert engine.runtime("", "backlog").pending == 0


def test_a_failing_chore_does_not_stop_the_embedding(
    engine: ContextEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full() -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(engine.store, "maintain", disk_full)
    monkeypatch.setattr("contextwm.indexing.indexer.MAINTAIN_SECONDS", 0.0)
    indexer = Indexer(engine, batch_size=4)
    indexer.start()
    try:
        for n in range(3):
            engine.append("", "c", [NewItem("user", f"turn {n}") for _ in range(5)])
            deadline = time.monotonic() + 60
            while engine.runtime("", "c").pending and time.monotonic() < deadline:
                time.sleep(0.02)
            assert engine.runtime("", "c").pending == 0
    finally:
        monkeypatch.undo()
        indexer.stop()


class Counting(HashingEmbedder):
    """The hashing embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        super().__init__(32)
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts += len(texts)
        return super().embed(texts)


def test_batches_are_urgent_for_a_waiting_reader_and_for_a_backlog_behind_for_long(
    engine: ContextEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    usual, urgent = Counting(), Counting()
    indexer = Indexer(engine, batch_size=8, embedder=usual, urgent_embed=urgent.embed)
    engine.append("", "backlog", [NewItem("user", f"old turn {n}") for n in range(20)])
    engine.append("", "asked", [NewItem("user", "the turn a reader waits for")])
    with engine.vector_waiters.waiting(engine.runtime("", "asked").key):
        assert indexer.run_once() == 1
    assert (usual.texts, urgent.texts) == (0, 1)
    # A backlog: urgent once every claim has found items for BEHIND_SECONDS (here at once),
    # and no longer once one finds none.
    monkeypatch.setattr("contextwm.indexing.indexer.BEHIND_SECONDS", 0.0)
    assert [indexer.run_once() for _ in range(4)] == [8, 8, 4, 0]
    assert (usual.texts, urgent.texts) == (0, 21)
    monkeypatch.setattr("contextwm.indexing.indexer.BEHIND_SECONDS", 3600.0)
    engine.append("", "backlog", [NewItem("user", f"new turn {n}") for n in range(8)])
    assert indexer.run_once() == 8
    assert (usual.texts, urgent.texts) == (8, 21)
