"""The Watch stream, its replay on reconnect, and retention gaps."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator

import pytest
from conftest import StartService
from contextwm.app import Service
from contextwm_client import (
    Client,
    ConversationSettings,
    Event,
    FileRef,
    NotFoundError,
    ResourceExhaustedError,
)

WAIT = 20.0


class Listener:
    """Collects a watch stream's events on a thread, so the test can act meanwhile."""

    def __init__(self, client: Client, cid: str, after: int = 0) -> None:
        self.stream = client.watch(cid, after_event_id=after)
        self.events: queue.Queue[Event] = queue.Queue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for event in self.stream:
            self.events.put(event)

    def take(self, n: int) -> list[Event]:
        out: list[Event] = []
        deadline = time.monotonic() + WAIT
        while len(out) < n:
            out.append(self.events.get(timeout=max(0.01, deadline - time.monotonic())))
        return out

    def until(self, kind: str) -> list[Event]:
        out: list[Event] = []
        deadline = time.monotonic() + WAIT
        while not out or out[-1].kind != kind:
            out.append(self.events.get(timeout=max(0.01, deadline - time.monotonic())))
        return out

    def close(self) -> None:
        self.stream.cancel()
        self.thread.join(WAIT)


@pytest.fixture
def service(start_service: StartService) -> Service:
    return start_service()


@pytest.fixture
def client(service: Service) -> Iterator[Client]:
    with Client(f"127.0.0.1:{service.port}") as c:
        yield c


def test_watch_streams_every_kind_of_change_as_it_happens(client: Client) -> None:
    client.create_conversation(
        "w",
        # Recency halving per item decides the eviction, whether or not the newest turn's
        # vector has arrived when it is scored.
        settings=ConversationSettings(
            window_max_items=3, context_limit=100_000, recency_half_life_items=1
        ),
    )
    listener = Listener(client, "w")
    try:
        for k in range(4):
            client.append("w", f"turn {k}", role="user" if k % 2 == 0 else "assistant")
        # The fourth append evicts: its eviction comes first, then the usage it leads to.
        events = listener.until("eviction") + listener.take(1)
        assert [e.kind for e in events] == ["usage"] * 3 + ["eviction", "usage"]
        assert len(events[3].eviction_seqs) == 1 and events[3].eviction_seqs[0] in (1, 2)
        assert [e.usage.active_items for e in events if e.usage] == [1, 2, 3, 4]
        client.append("w", "x.py v1", role="tool", file=FileRef("x.py", "read"))
        client.append("w", "x.py v2", role="tool", file=FileRef("x.py", "read"))
        assert "duplicate_read" in [e.kind for e in listener.until("duplicate_read")]
        client.create_checkpoint("w", "cp")
        assert listener.until("checkpoint_created")[-1].checkpoint.name == "cp"  # type: ignore[union-attr]
        client.compact("w", "short summary")
        compaction = [e for e in listener.until("usage") if e.kind == "compaction"]
        assert compaction and compaction[0].compaction.number == 1  # type: ignore[union-attr]
        for k in range(6):
            client.append(
                "w",
                f"later turn {k} " + "with more words " * 10,
                role="user" if k % 2 == 0 else "assistant",
            )
        client.truncate("w", "none")
        truncation = listener.until("truncation")[-1]
        assert truncation.edit is not None and truncation.edit.kind == "truncation"
        client.restore_checkpoint("w", "cp")
        restored = listener.until("checkpoint_restored")[-1]
        assert restored.checkpoint is not None and restored.reverted_items > 0
        last = listener.take(1)[0]
        assert last.kind == "usage" and last.usage is not None
        ids = [e.id for e in events]
        assert ids == list(range(1, len(ids) + 1))
    finally:
        listener.close()


def test_a_reconnecting_watcher_misses_nothing(client: Client) -> None:
    client.append("r", "first", role="user")
    listener = Listener(client, "r")
    seen = listener.take(1)
    listener.close()
    for k in range(5):  # while nobody watches
        client.append("r", f"missed {k}", role="user")
    again = Listener(client, "r", after=seen[-1].id)
    try:
        replayed = again.take(5)
        assert [e.id for e in replayed] == list(range(seen[-1].id + 1, seen[-1].id + 6))
        client.append("r", "live again", role="user")
        assert again.take(1)[0].id == seen[-1].id + 6
    finally:
        again.close()


def test_watching_from_the_last_event_id_streams_only_what_happens_next(
    client: Client,
) -> None:
    assert client.create_conversation("n").last_event_id == 0
    for k in range(3):
        client.append("n", f"before {k}", role="user")
    last = client.get_conversation("n").last_event_id
    everything = Listener(client, "n")
    listener = Listener(client, "n", after=last)
    try:
        # Everything kept ends at last_event_id: no event is left out, none is invented.
        assert everything.take(last)[-1].id == last
        client.append("n", "after", role="user")
        first = listener.take(1)[0]
        assert first.id == last + 1 and first.kind == "usage"
        assert client.list_conversations().entries[0].last_event_id == first.id
    finally:
        everything.close()
        listener.close()


def test_events_past_retention_are_reported_as_a_gap(start_service: StartService) -> None:
    service = start_service(event_retention_seconds=0.0)
    with Client(f"127.0.0.1:{service.port}") as client:
        for k in range(3):
            client.append("g", f"turn {k}", role="user")
        time.sleep(0.01)
        assert service.indexer.prune_events() == 3
        client.append("g", "kept", role="user")
        listener = Listener(client, "g")
        try:
            gap, kept = listener.take(2)
            assert (gap.kind, gap.missed) == ("gap", 3)
            assert kept.id == 4 and kept.kind == "usage"
        finally:
            listener.close()


def test_watch_errors_are_statuses(start_service: StartService) -> None:
    from contextwm.conversations.validation import Limits

    service = start_service(limits=Limits(max_watchers=1))
    with Client(f"127.0.0.1:{service.port}") as client:
        with pytest.raises(NotFoundError):
            list(client.watch("nobody"))
        client.append("c", "hello", role="user")
        listener = Listener(client, "c")
        try:
            listener.take(1)
            with pytest.raises(ResourceExhaustedError, match="max_watchers"):
                list(client.watch("c"))
        finally:
            listener.close()


def test_deleting_a_conversation_ends_its_watch_streams(client: Client) -> None:
    client.append("del", "hello", role="user")
    listener = Listener(client, "del")
    listener.take(1)
    client.delete_conversation("del")
    listener.thread.join(WAIT)
    assert not listener.thread.is_alive()
