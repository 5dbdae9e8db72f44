"""Prometheus metrics, scraped over HTTP from a real server: calls by method and status,
latency histograms, window fill, evictions, archive and index sizes, embedding, caches; and
no metrics port unless one is asked for."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import StartService
from contextwm_client import Client, ConversationSettings, InvalidArgumentError, NotFoundError
from metrics_scrape import Scrape

APPENDED = 8
WINDOW_ITEMS = 3


def test_a_scrape_counts_what_was_done(start_service: StartService, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("".join(f"line {n}\n" for n in range(300)))
    # Long enough that the search below returns only once every item is embedded.
    service = start_service(metrics_port=0, index_wait_seconds=60.0, workspace_root=str(workspace))
    assert service.metrics_port
    with Client(f"127.0.0.1:{service.port}") as client:
        client.create_conversation(
            "m", settings=ConversationSettings(window_max_items=WINDOW_ITEMS)
        )
        evicted = 0
        for n in range(APPENDED):
            evicted += len(
                client.append("m", f"Note {n}: the build on runner {n} passed.").evicted_seqs
            )
        with pytest.raises(NotFoundError):
            client.get_conversation("no-such-conversation")
        with pytest.raises(InvalidArgumentError):
            client.get_context("m", "did the build pass?", max_tokens=1)
        # Dense search waits until the conversation's items are embedded (read-your-writes).
        client.search("which runner passed?", conversation_id="m")
        conversation = client.get_conversation("m")
        client.read_file_chunk("m", "notes.md", record=False)
    assert conversation.pending_embeddings == 0
    assert evicted == APPENDED - WINDOW_ITEMS == conversation.archived_items

    scrape = Scrape(service.metrics_port)
    calls = {
        (s.labels["method"], s.labels["code"]): s.value
        for s in scrape.of("contextwm_requests_total")
    }
    assert calls == {
        ("CreateConversation", "OK"): 1,
        ("Append", "OK"): APPENDED,
        ("GetConversation", "NOT_FOUND"): 1,
        ("GetConversation", "OK"): 1,
        ("GetContext", "INVALID_ARGUMENT"): 1,
        ("Search", "OK"): 1,
        ("ReadFileChunk", "OK"): 1,
    }
    for method in {m for m, _ in calls}:
        count = scrape.value("contextwm_request_duration_seconds_count", method=method)
        assert count == sum(v for (m, _), v in calls.items() if m == method)
        assert (
            scrape.value("contextwm_request_duration_seconds_bucket", method=method, le="+Inf")
            == count
        )
        assert scrape.value("contextwm_request_duration_seconds_sum", method=method) > 0

    window = conversation.window
    assert scrape.value("contextwm_loaded_conversations") == 1
    assert scrape.value("contextwm_window_items") == window.item_count == WINDOW_ITEMS
    assert scrape.value("contextwm_window_limit_items") == WINDOW_ITEMS
    assert scrape.value("contextwm_window_tokens") == window.token_count
    assert scrape.value("contextwm_window_limit_tokens") == window.token_limit
    assert scrape.value("contextwm_evicted_items_total") == evicted
    assert scrape.value("contextwm_archived_items") == evicted
    # The search loaded the archive's index; the indexer added what it embedded later.
    assert scrape.value("contextwm_index_vectors") == evicted
    assert scrape.value("contextwm_index_bytes") == evicted * 384 * 4  # MiniLM: 384 floats

    assert scrape.value("contextwm_embedding_queue_items") == 0
    assert scrape.value("contextwm_embedded_items_total") == APPENDED
    assert scrape.value("contextwm_embedding_seconds_total") > 0
    assert scrape.value("contextwm_embedding_batch_items_sum") == APPENDED
    batches = scrape.value("contextwm_embedding_batch_items_count")
    assert 1 <= batches <= APPENDED
    assert scrape.value("contextwm_embedding_batch_items_bucket", le="+Inf") == batches
    assert scrape.value("contextwm_embedding_batch_items_bucket", le="32.0") == batches

    hits = {s.labels["cache"]: s.value for s in scrape.of("contextwm_cache_hits_total")}
    misses = {s.labels["cache"]: s.value for s in scrape.of("contextwm_cache_misses_total")}
    caches = {
        "conversations",
        "token_counts",
        "paragraph_tokens",
        "item_messages",
        "contributor_embeddings",
        "contributor_pieces",
    }
    assert set(hits) == set(misses) == caches | {"workspace_chunks"}
    # The chunk cache, bounded in bytes, also reports its size.
    assert misses["workspace_chunks"] == 1
    assert scrape.value("contextwm_cache_bytes", cache="workspace_chunks") > 2000
    assert scrape.value("contextwm_cache_entries", cache="workspace_chunks") == 1
    assert scrape.value("contextwm_cache_evictions_total", cache="workspace_chunks") == 0
    # Every call after the first found the conversation in memory; the unknown one and the
    # first load went to the store.
    assert hits["conversations"] >= APPENDED and misses["conversations"] >= 2
    assert misses["token_counts"] > 0  # every short item's count is looked up first


def test_a_stream_is_counted_when_it_ends(start_service: StartService) -> None:
    service = start_service(metrics_port=0)
    port = service.metrics_port
    assert port
    with Client(f"127.0.0.1:{service.port}") as client:
        for conversation in ("ended", "cancelled"):
            client.create_conversation(conversation)
            client.append(conversation, "an item, so that a watch has an event to replay")
        with client.watch("ended") as events:
            stream = iter(events)
            next(stream)  # the stream is open on the server now
            client.delete_conversation("ended")  # which ends it
            assert list(stream) == []
        scrape = Scrape(port)
        assert scrape.value("contextwm_requests_total", method="Watch", code="OK") == 1
        assert scrape.value("contextwm_request_duration_seconds_count", method="Watch") == 1
        assert scrape.value("contextwm_requests_total", method="DeleteConversation", code="OK") == 1

        with client.watch("cancelled") as events:
            next(iter(events))
        # The server learns of the cancel after the client has moved on: nothing to wait on
        # but the count itself.
        deadline = time.monotonic() + 30
        while scrape.value("contextwm_request_duration_seconds_count", method="Watch") < 2:
            assert time.monotonic() < deadline, "the cancelled watch was never counted"
            time.sleep(0.05)
            scrape = Scrape(port)
        assert scrape.value("contextwm_requests_total", method="Watch", code="CANCELLED") == 1
        assert scrape.value("contextwm_requests_total", method="Watch", code="OK") == 1


def _listening_ports() -> set[int]:
    """The TCP ports this process listens on: its sockets among the kernel's LISTEN rows."""
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed since the listing
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_metrics_are_off_unless_a_port_is_given(start_service: StartService) -> None:
    before = _listening_ports()
    off = start_service()
    assert off.metrics is None and off.metrics_port is None
    assert _listening_ports() - before == {off.port}
    on = start_service(metrics_port=0)
    assert on.metrics_port is not None
    assert _listening_ports() - before == {off.port, on.port, on.metrics_port}


def test_the_archive_gauge_counts_the_whole_store_not_only_loaded_conversations(
    start_service: StartService, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    service = start_service(data_dir=data)
    with Client(f"127.0.0.1:{service.port}") as client:
        for conv in ("a", "b"):
            client.create_conversation(conv, settings=ConversationSettings(window_max_items=2))
            for n in range(6):
                client.append(conv, f"Note {n} of {conv}.")
            # Embedded before the stop: the restarted indexer would load a conversation
            # that still had items to embed.
            client.search("note", conversation_id=conv)
            assert client.get_conversation(conv).pending_embeddings == 0
        archived = sum(client.get_conversation(c).archived_items for c in ("a", "b"))
    service.stop(grace=0)
    assert archived == 8
    # After a restart no conversation is in memory until a call needs it.
    restarted = start_service(data_dir=data, metrics_port=0)
    assert restarted.metrics_port
    scrape = Scrape(restarted.metrics_port)
    assert scrape.value("contextwm_loaded_conversations") == 0
    assert scrape.value("contextwm_archived_items") == archived
