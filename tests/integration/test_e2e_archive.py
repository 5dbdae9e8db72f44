"""Evicted items keep every field, are embedded with MiniLM and indexed in FAISS,
and embedding work from concurrent requests is batched."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import numpy as np
import pytest
from conftest import StartService
from contextwm.adapters.query_coalescing import QUERY_BATCH
from contextwm.indexing.pacing import DRAIN_BATCH
from contextwm.ports.embedder import Embedder
from contextwm_client import Client, ConversationSettings, FileRef, NewItem
from recording_embedder import RecordingEmbedder

# The paths that differ by store: each test runs on SQLite, then PostgreSQL.
pytestmark = pytest.mark.both_stores


def test_evicted_items_keep_all_fields_and_are_found_by_meaning(client: Client) -> None:
    client.create_conversation("a", settings=ConversationSettings(window_max_items=2))
    when = datetime(2024, 2, 3, 4, 5, 6, tzinfo=UTC)
    client.append(
        "a",
        "My sister moved to Lisbon last spring.",
        timestamp=when,
        metadata={"session": "s1"},
        file=FileRef("notes/family.md", "mention"),
    )
    client.append("a", "The build uses gradle with the kotlin plugin.")
    client.append("a", "Lunch was a sandwich.")
    (archived,) = client.list_items("a", states=["archived"]).entries
    assert archived.seq == 1
    assert archived.content == "My sister moved to Lisbon last spring."
    assert archived.timestamp == when
    assert dict(archived.metadata) == {"session": "s1"}
    assert archived.flags == ()
    assert archived.file == FileRef("notes/family.md", "mention")
    # No shared content words: only the embedding can connect them.
    hits = client.search("Where does my sibling live nowadays?", conversation_id="a", mode="dense")
    assert [h.seq for h in hits.hits] == [1]
    assert hits.hits[0].parts.similarity > 0.3
    assert dict(hits.hits[0].metadata) == {"session": "s1"}


def test_concurrent_appends_are_embedded_in_batches(
    start_service: StartService, embedder: Embedder
) -> None:
    recording = RecordingEmbedder(embedder)
    service = start_service(model=recording)
    target = f"127.0.0.1:{service.port}"

    def writer(n: int) -> None:
        with Client(target) as c:
            for k in range(10):
                c.append(f"conv-{n}", f"writer {n} says thing {k} about the weather")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with Client(target) as c:
        for n in range(8):
            c.get_context(f"conv-{n}", "weather", max_tokens=100)  # waits for the indexer
            assert c.get_conversation(f"conv-{n}").pending_embeddings == 0
    item_batches = [b for b in recording.batches if b > 1]
    assert sum(recording.batches) >= 80
    assert max(recording.batches) > 1
    assert len(item_batches) < 80  # far fewer model calls than items


def test_a_burst_s_backlog_is_embedded_in_large_batches(
    start_service: StartService, embedder: Embedder
) -> None:
    """Once appends stop, the indexer embeds what they left in batches the model runs at
    its batched rate, not in the small batches it uses beside appends."""
    recording = RecordingEmbedder(embedder)
    service = start_service(model=recording)
    with Client(f"127.0.0.1:{service.port}") as c:
        for b in range(4):
            c.append_batch(
                "burst", [NewItem(f"burst note {b}-{k} on the boiler") for k in range(100)]
            )
        # Polled, not waited for by a reader (whose items would go first, in small batches).
        deadline = time.monotonic() + 120
        while c.get_conversation("burst").pending_embeddings:
            assert time.monotonic() < deadline, "the backlog did not drain"
            time.sleep(0.05)
    batches = [b for b in recording.batches if b > QUERY_BATCH]
    assert sum(batches) == 400
    assert max(batches) == DRAIN_BATCH, batches
    assert len(batches) <= 400 // DRAIN_BATCH + 3, batches


def test_archived_vectors_are_the_models_vectors(client: Client, service: object) -> None:
    from contextwm.app import Service

    assert isinstance(service, Service)
    client.create_conversation("v", settings=ConversationSettings(window_max_items=1))
    client.append("v", "first item about compilers")
    client.append("v", "second item about gardening")
    client.get_context("v", "compilers", max_tokens=100)
    key = service.store.get_conversation("default", "v")
    assert key is not None
    seqs, vectors = service.store.archived_vectors(key.key, service.engine.embedder.model_name)
    assert seqs.tolist() == [1]
    expected = service.engine.embedder.embed(["first item about compilers"])[0]
    assert np.allclose(vectors[0], expected, atol=1e-5)


def test_a_reader_gets_its_vectors_during_a_burst_of_appends(start_service: StartService) -> None:
    # While appends keep the server busy the indexer embeds 1 % of the time (pauses of 99x a
    # batch); a GetContext waiting for its own append's vector lifts that at once.
    service = start_service(indexer_busy_duty=0.01, index_wait_seconds=60.0)
    target = f"127.0.0.1:{service.port}"
    stop = threading.Event()

    def producer(n: int) -> None:
        with Client(target) as c:
            k = 0
            while not stop.is_set():
                k += 1
                c.append(f"burst-{n}", f"producer {n} logs boiler reading {k}")

    producers = [threading.Thread(target=producer, args=(n,)) for n in range(3)]
    for t in producers:
        t.start()
    try:
        time.sleep(0.5)  # the burst is on, with a backlog ahead of the reader's item
        with Client(target) as c:
            c.append("reader", "The boiler's pressure limit is 2.5 bar.")
            began = time.monotonic()
            context = c.get_context("reader", "boiler pressure limit", max_tokens=200)
            waited = time.monotonic() - began
            assert c.get_conversation("reader").pending_embeddings == 0
            assert c.get_conversation("burst-0").last_seq > 0
    finally:
        stop.set()
        for t in producers:
            t.join()
    assert "2.5 bar" in context.text
    assert waited < 30.0  # held back, it would wait out index_wait_seconds (60 s)
