"""The erasure service on an engine over each store, with a hashing model: vectors computed
from items erased meanwhile reach no index, and memory and the index file follow the store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from contextwm.adapters.embedder_fake import HashingEmbedder
from contextwm.adapters.faiss_index import FaissIndex, FaissIndexFiles
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.conversations.engine import ContextEngine
from contextwm.domain.conversations import SettingsPatch
from contextwm.domain.erasure import forget_filter
from contextwm.domain.items import NewItem
from contextwm.erasure.service import Erasure
from stores import RoleStore

MODEL = HashingEmbedder(16)
USER = {"user": "42"}


def engine_on(store: RoleStore, tmp_path: Path) -> ContextEngine:
    return ContextEngine(
        store,
        MODEL,
        FaissIndexFiles(tmp_path / "indexes", MODEL.dimension),
        token_counter,
        index_wait_seconds=0.0,
    )


def embed_pending(engine: ContextEngine) -> None:
    """What the indexer does, at once."""
    while pending := engine.store.pending_vectors(MODEL.model_name, 100):
        vectors = MODEL.embed([p.text for p in pending])
        for key in {p.conversation_key for p in pending}:
            rows = [n for n, p in enumerate(pending) if p.conversation_key == key]
            engine.vectors.apply(key, [pending[n].seq for n in rows], vectors[rows])


def namespace_ids(engine: ContextEngine) -> set[int]:
    query = MODEL.embed(["anything"])[0]
    return {seq for (_, seq), _ in engine.vectors.namespaces.nearest("default", query, 100)}


def test_vectors_of_items_erased_while_being_embedded_reach_no_index(
    store: RoleStore, tmp_path: Path
) -> None:
    engine = engine_on(store, tmp_path)
    engine.create_conversation("default", "c", SettingsPatch(window_max_items=2))
    engine.append("default", "c", [NewItem("user", f"settled note {n}") for n in range(4)])
    embed_pending(engine)
    rt = engine.runtime("default", "c")
    with rt.lock:
        engine.ensure_index(rt)
    assert namespace_ids(engine) == {1, 2, 3, 4}
    # Two more items, one of them to be erased; the indexer reads both before the erasure.
    engine.append(
        "default",
        "c",
        [NewItem("user", "late secret", metadata=USER), NewItem("user", "late plain")],
    )
    pending = store.pending_vectors(MODEL.model_name, 100)
    assert [p.seq for p in pending] == [5, 6]
    receipt = Erasure(engine).forget("default", "c", forget_filter(USER, None, None))
    assert receipt.counts.items == 1 and receipt.counts.vectors == 0
    assert rt.pending == 1
    # ... and delivers their vectors after it.
    engine.vectors.apply(rt.key, [5, 6], MODEL.embed([p.text for p in pending]))
    assert sorted(store.vectors_for(rt.key, range(1, 7), MODEL.model_name)) == [1, 2, 3, 4, 6]
    assert 5 not in namespace_ids(engine)
    assert rt.index is not None and 5 not in rt.index.ids().tolist()
    assert 5 not in [e.item.seq for e in rt.window]
    assert rt.pending == 0


def test_memory_and_the_index_file_follow_the_store_after_an_erasure(
    store: RoleStore, tmp_path: Path
) -> None:
    engine = engine_on(store, tmp_path)
    engine.create_conversation("default", "c", SettingsPatch(window_max_items=2))
    items = [NewItem("user", f"note {n}", metadata=USER if n % 2 else {}) for n in range(6)]
    engine.append("default", "c", items)
    embed_pending(engine)
    rt = engine.runtime("default", "c")
    with rt.lock:
        engine.ensure_index(rt)
    engine.save_indexes()
    before = (rt.total, rt.archived, rt.tokens)
    receipt = Erasure(engine).forget("default", "c", forget_filter(USER, None, None))
    gone = {2, 4, 6}
    assert {s for r in receipt.conversations[0].seqs for s in range(r.first, r.last + 1)} == gone
    assert receipt.counts.index_entries == 2  # 2 and 4 were archived; 6 was in the window
    assert receipt.counts.namespace_index_entries == 0  # never built
    assert (rt.total, rt.archived) == (before[0] - 3, before[1] - 2)
    assert rt.tokens == before[2] - receipt.counts.tokens
    assert gone.isdisjoint(e.item.seq for e in rt.window)
    saved = FaissIndex.read(tmp_path / "indexes" / f"{rt.key}.faiss")
    assert sorted(saved.ids().tolist()) == [1, 3]
    assert np.allclose(saved.vectors([3]), store.vectors_for(rt.key, [3], MODEL.model_name)[3])
    assert not rt.index_dirty
