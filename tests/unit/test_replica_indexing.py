"""Two replicas on one PostgreSQL database, each an engine with its own indexer: every item is
embedded once between them, a dead replica's claims are taken over after their lease, and a
reader on one replica is answered once the other stored the vectors it waits for."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from contextwm.adapters.embedder_fake import HashingEmbedder
from contextwm.adapters.faiss_index import FaissIndexFiles
from contextwm.adapters.postgres.store import PostgresStore
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.conversations.engine import ContextEngine
from contextwm.domain.conversations import SettingsPatch
from contextwm.domain.items import NewItem
from contextwm.indexing.indexer import Indexer
from contextwm.ports.embedder import Vectors

NS, CID = "default", "c"
# A reader's wait for vectors: the test's reader must be answered well within it.
WAIT_SECONDS = 60.0
# The dead replica's lease: long enough that a busy machine has b look while it runs.
LEASE_SECONDS = 2.0


class CountingEmbedder:
    """The hashing embedder, counting in `counts` (shared by the replicas) how often each
    text is embedded; each batch takes `delay` seconds, as a model's would."""

    def __init__(self, counts: Counter[str], lock: threading.Lock, delay: float = 0.0) -> None:
        self.inner = HashingEmbedder(32)
        self.counts = counts
        self.lock = lock
        self.delay = delay

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        time.sleep(self.delay)
        with self.lock:
            self.counts.update(texts)
        return self.inner.embed(texts)


@dataclass
class Replica:
    store: PostgresStore
    engine: ContextEngine
    indexer: Indexer
    embedded: Counter[str]  # what this replica's indexer embedded


@pytest.fixture
def replicas(pg_dsn: str, tmp_path: Path) -> Iterator[tuple[Replica, Replica]]:
    made: list[Replica] = []
    lock = threading.Lock()
    for name in ("a", "b"):
        store = PostgresStore(pg_dsn)
        engine = ContextEngine(
            store,
            HashingEmbedder(32),
            FaissIndexFiles(tmp_path / name, 32),
            token_counter,
            index_wait_seconds=WAIT_SECONDS,
        )
        embedded: Counter[str] = Counter()
        embedder = CountingEmbedder(embedded, lock, delay=0.01)
        made.append(
            Replica(store, engine, Indexer(engine, batch_size=8, embedder=embedder), embedded)
        )
    yield made[0], made[1]
    for r in made:
        r.store.close()


def append(replica: Replica, n: int) -> list[str]:
    """n items appended through the replica, in batches of 10; returns their texts."""
    replica.engine.create_conversation(NS, CID, SettingsPatch())
    texts = [f"item {i} of the replicated conversation" for i in range(n)]
    for start in range(0, n, 10):
        replica.engine.append(
            NS, CID, [NewItem(role="user", content=t) for t in texts[start : start + 10]]
        )
    return texts


def drain(replica: Replica) -> None:
    while replica.indexer.run_once():
        pass


def pending(replica: Replica) -> list[str]:
    return [
        p.text for p in replica.store.pending_vectors(replica.engine.embedder.model_name, 10_000)
    ]


def stored_vectors(replica: Replica, n: int) -> int:
    key = replica.engine.runtime(NS, CID).key
    model = replica.engine.embedder.model_name
    return len(replica.store.vectors_for(key, range(1, n + 1), model))


def test_two_replicas_embed_each_item_once(replicas: tuple[Replica, Replica]) -> None:
    a, b = replicas
    texts = append(a, 200)
    for r in replicas:
        r.indexer.start()
    deadline = time.monotonic() + 30
    while pending(a) and time.monotonic() < deadline:
        time.sleep(0.05)
    for r in replicas:
        r.indexer.stop()
    assert pending(a) == []
    total = a.embedded + b.embedded
    assert total == Counter(texts)  # each exactly once between them
    assert a.embedded and b.embedded, "both replicas took part"
    assert stored_vectors(b, 200) == 200


def test_a_dead_replicas_claims_are_taken_over_after_the_lease(
    replicas: tuple[Replica, Replica],
) -> None:
    a, b = replicas
    texts = append(a, 60)
    model = a.engine.embedder.model_name
    # a claims a batch and dies before writing it. The lease starts between these two times.
    before = time.monotonic()
    dead = a.store.claim_pending(model, 20, 0, "dead-replica", LEASE_SECONDS)
    claimed_at = time.monotonic()

    def leased() -> bool:
        return time.monotonic() - before < LEASE_SECONDS

    assert b.indexer.run_once() == 8
    if leased():  # else the machine was too slow for the lease to tell anything
        assert not set(b.embedded) & {p.text for p in dead}  # left to a while the lease runs
    drain(b)
    if leased():
        assert sorted(pending(b)) == sorted(p.text for p in dead)
    time.sleep(max(0.0, claimed_at + LEASE_SECONDS + 0.1 - time.monotonic()))
    drain(b)
    assert pending(b) == []
    assert b.embedded == Counter(texts)
    assert stored_vectors(b, 60) == 60


def test_a_replica_restarted_under_its_name_frees_its_predecessors_claims_at_once(
    replicas: tuple[Replica, Replica],
) -> None:
    a, b = replicas
    texts = append(a, 30)
    model = a.engine.embedder.model_name
    a.store.claim_pending(model, 30, 0, "replica-a", 60.0)  # then the process was killed
    drain(b)
    assert len(pending(b)) == 30  # the lease keeps them from b
    restarted = Indexer(a.engine, owner="replica-a")
    restarted._thread = threading.Thread(target=lambda: None)  # starts, embeds nothing
    restarted.start()  # frees them before its first batch
    drain(b)
    assert pending(b) == []
    assert b.embedded == Counter(texts)


def test_a_reader_on_one_replica_gets_the_vectors_the_other_stores(
    replicas: tuple[Replica, Replica],
) -> None:
    a, b = replicas
    append(a, 30)
    rt = b.engine.runtime(NS, CID)
    assert rt.pending == 30
    waited: list[float] = []

    def read() -> None:
        began = time.monotonic()
        b.engine.vectors.wait_indexed(rt)
        waited.append(time.monotonic() - began)

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(0.3)
    assert not waited  # nothing embedded yet
    drain(a)  # only a embeds: b's indexer never runs
    reader.join(WAIT_SECONDS + 1)
    assert waited and waited[0] < WAIT_SECONDS / 4
    assert rt.pending == 0
    with b.engine.holding(NS, CID) as held:
        assert all(e.vector is not None for e in held.window)
    assert not b.embedded


class FailingEmbedder(HashingEmbedder):
    def embed(self, texts: Sequence[str]) -> Vectors:
        raise OSError("the model's process went away")


def test_a_failed_batch_is_released_for_any_replica(replicas: tuple[Replica, Replica]) -> None:
    a, b = replicas
    append(a, 20)
    failing = Indexer(a.engine, batch_size=8, embedder=FailingEmbedder(32))
    with pytest.raises(OSError):
        failing.run_once()
    model = a.engine.embedder.model_name
    last = max(p.item_id for p in b.store.pending_vectors(model, 100))
    # Behind any cursor, yet claimable at once, not after the lease.
    assert len(b.store.claim_pending(model, 100, last, "b", 60.0)) == 8
