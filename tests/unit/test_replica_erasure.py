"""Two replicas on one PostgreSQL database: what one erases leaves the other's index file, its
conversation index in memory and its namespace index, once the erasure is announced."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from contextwm.adapters.embedder_fake import HashingEmbedder
from contextwm.adapters.faiss_index import FaissIndexFiles
from contextwm.adapters.postgres.store import PostgresStore
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.conversations.engine import ContextEngine
from contextwm.domain.conversations import SettingsPatch
from contextwm.domain.erasure import forget_filter
from contextwm.domain.items import NewItem
from contextwm.erasure.service import Erasure

MODEL = HashingEmbedder(16)
USER = {"user": "42"}
WAIT = 20.0


@pytest.fixture
def replicas(pg_dsn: str, tmp_path: Path) -> Iterator[tuple[ContextEngine, ContextEngine]]:
    engines = [
        ContextEngine(
            PostgresStore(pg_dsn),
            MODEL,
            FaissIndexFiles(tmp_path / name, MODEL.dimension),
            token_counter,
            index_wait_seconds=0.0,
        )
        for name in ("a", "b")
    ]
    yield engines[0], engines[1]
    for engine in engines:
        engine.store.close()


def embed_pending(engine: ContextEngine) -> None:
    while pending := engine.store.pending_vectors(MODEL.model_name, 100):
        vectors = MODEL.embed([p.text for p in pending])
        for key in {p.conversation_key for p in pending}:
            rows = [n for n, p in enumerate(pending) if p.conversation_key == key]
            engine.vectors.apply(key, [pending[n].seq for n in rows], vectors[rows])


def namespace_items(engine: ContextEngine) -> set[tuple[int, int]]:
    """(conversation key, seq) of every item the replica's namespace index holds."""
    query = MODEL.embed(["anything"])[0]
    return {item for item, _ in engine.vectors.namespaces.nearest("default", query, 100)}


def namespace_seqs(engine: ContextEngine) -> set[int]:
    return {seq for _, seq in namespace_items(engine)}


def eventually(done: Callable[[], bool]) -> bool:
    """Whether done() holds within WAIT seconds (the announcement comes on another thread)."""
    deadline = time.monotonic() + WAIT
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_what_one_replica_erases_leaves_the_others_files_and_memory(
    replicas: tuple[ContextEngine, ContextEngine], tmp_path: Path
) -> None:
    a, b = replicas
    a.create_conversation("default", "c", SettingsPatch(window_max_items=2))
    items = [NewItem("user", f"note {n}", metadata=USER if n % 2 else {}) for n in range(8)]
    a.append("default", "c", items)
    embed_pending(a)
    # Replica b has the conversation loaded, its index built and saved, and its namespace
    # index built: every erased item is in each.
    rt = b.runtime("default", "c")
    with rt.lock:
        b.ensure_index(rt)
    b.save_indexes()
    key = rt.key
    file_b = tmp_path / "b" / f"{key}.faiss"
    assert file_b.exists()
    assert namespace_seqs(b) == set(range(1, 9))
    receipt = Erasure(a).forget("default", "c", forget_filter(USER, None, None))
    erased = {2, 4, 6, 8}
    assert receipt.counts.items == len(erased)
    # b drops its file and its memory of the vectors, and reads its namespace's again.
    assert eventually(lambda: not file_b.exists())
    assert eventually(lambda: namespace_seqs(b) == {1, 3, 5, 7})
    assert rt.index is None
    # Its next use rebuilds from the store, without them.
    rt = b.runtime("default", "c")
    with rt.lock:
        b.ensure_index(rt)
        assert rt.index is not None
        assert erased.isdisjoint(rt.index.ids().tolist())
    # The replica that erased keeps its own file, written without them.
    file_a = tmp_path / "a" / f"{key}.faiss"
    assert not file_a.exists() or erased.isdisjoint(
        FaissIndexFiles(tmp_path / "a", MODEL.dimension).load(key).ids().tolist()  # type: ignore[union-attr]
    )


def test_a_conversation_one_replica_deletes_leaves_the_others_files_and_memory(
    replicas: tuple[ContextEngine, ContextEngine], tmp_path: Path
) -> None:
    a, b = replicas
    a.create_conversation("default", "c", SettingsPatch(window_max_items=2))
    a.append("default", "c", [NewItem("user", f"note {n}") for n in range(5)])
    a.append("default", "kept", [NewItem("user", "another conversation")])
    embed_pending(a)
    rt = b.runtime("default", "c")
    with rt.lock:
        b.ensure_index(rt)
    b.save_indexes()
    file_b = tmp_path / "b" / f"{rt.key}.faiss"
    assert file_b.exists()
    kept = b.runtime("default", "kept").key
    assert len(namespace_items(b)) == 6
    Erasure(a).delete_conversation("default", "c")
    assert eventually(lambda: not file_b.exists())
    assert eventually(lambda: namespace_items(b) == {(kept, 1)})
    assert rt.deleted
    assert b.runtimes.by_key(rt.key) is None and b.runtimes.by_key(kept) is not None
