"""Idle conversations leave memory beyond max_loaded, and come back from the store as they
were; a runtime in use, with embeddings pending or an unsaved index stays."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from contextwm.conversations.engine import ContextEngine
from contextwm.domain.conversations import SettingsPatch
from contextwm.domain.errors import Unavailable
from contextwm.domain.items import NewItem
from hashing_engine import hashing_engine

NS = "default"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[ContextEngine]:
    with hashing_engine(tmp_path, index_wait_seconds=0.0, max_loaded_conversations=3) as engine:
        engine.runtimes.unload_idle_seconds = 0.0
        yield engine


def fill(engine: ContextEngine, cid: str, n: int = 12) -> None:
    engine.create_conversation(NS, cid, SettingsPatch(window_max_items=4))
    engine.append(NS, cid, [NewItem(role="user", content=f"{cid} says {k}") for k in range(n)])
    rt = engine.runtime(NS, cid)
    # As the indexer would: every item embedded, so nothing is pending.
    seqs = list(range(1, n + 1))
    engine.vectors.apply(rt.key, seqs, engine.embedder.embed([f"{cid} {s}" for s in seqs]))


def view(engine: ContextEngine, cid: str) -> tuple[object, ...]:
    rt = engine.runtime(NS, cid)
    window = [(e.item.seq, e.vector is not None) for e in rt.window.newest(100)]
    return (window, rt.archived, rt.total, rt.tokens, rt.last_seq, rt.active.item_seqs())


def test_the_least_recently_used_idle_runtimes_go_and_come_back_unchanged(
    engine: ContextEngine,
) -> None:
    for cid in "abcde":
        fill(engine, cid)
    before = {cid: view(engine, cid) for cid in "abcde"}
    engine.runtime(NS, "a")  # used last: stays
    assert engine.runtimes.unload_idle() == 2
    loaded = {rt.record.conversation_id for rt in engine.runtimes.loaded()}
    assert loaded == {"d", "e", "a"}
    for cid in "abcde":
        assert view(engine, cid) == before[cid]
    # Reloading b and c made five again: the two least recently used go now.
    assert engine.runtimes.unload_idle() == 2


def test_busy_pending_or_unsaved_runtimes_stay(engine: ContextEngine) -> None:
    for cid in "abcde":
        fill(engine, cid)
    runtimes = {cid: engine.runtime(NS, cid) for cid in "abcde"}  # a is the least recent
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with runtimes["a"].lock:
            held.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    runtimes["b"].pending = 1
    engine.vectors.ensure_index(runtimes["c"])  # built from stored vectors: unsaved
    try:
        # Two over the limit: the older three are passed over, the newer two go.
        assert engine.runtimes.unload_idle() == 2
    finally:
        release.set()
        holder.join()
    assert [cid for cid, rt in runtimes.items() if rt.unloaded] == ["d", "e"]


def test_nothing_goes_while_under_the_limit_or_recently_used(engine: ContextEngine) -> None:
    for cid in "abc":
        fill(engine, cid)
    assert engine.runtimes.unload_idle() == 0
    fill(engine, "d")
    engine.runtimes.unload_idle_seconds = 3600.0
    assert engine.runtimes.unload_idle() == 0


def test_a_change_on_an_unloaded_runtime_is_refused_and_the_next_call_works(
    engine: ContextEngine,
) -> None:
    for cid in "abcd":
        fill(engine, cid)
    stale = engine.runtime(NS, "a")
    for cid in "bcd":
        engine.runtime(NS, cid)
    assert engine.runtimes.unload_idle() == 1
    assert stale.unloaded
    with pytest.raises(Unavailable, match="retry"), engine.runtimes.holding(stale):
        pass
    outcome = engine.append(NS, "a", [NewItem(role="user", content="after the reload")])
    assert outcome.results[0].seq == 13
    # Vectors for an unloaded runtime still reach the store.
    engine.vectors.apply(stale.key, [13], engine.embedder.embed(["x"]))
    assert 13 in engine.store.vectors_for(stale.key, [13], engine.embedder.model_name)
