"""Two servers on one PostgreSQL database: a Watch on either streams every event of the
conversation, whichever server made it, in order, with no gap or duplicate, and a Watch
resumed from a later event gets the rest."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator

import pytest
from conftest import StartService
from contextwm.app import Service
from contextwm_client import Client, ConversationSettings, Event

WAIT = 20.0


class Watcher:
    """Collects a watch stream's events on a thread, so the test can act meanwhile."""

    def __init__(self, client: Client, cid: str, after: int = 0) -> None:
        self.stream = client.watch(cid, after_event_id=after)
        self.events: queue.Queue[Event] = queue.Queue()
        self.seen: list[Event] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for event in self.stream:
            self.events.put(event)

    def until(self, last_id: int) -> list[Event]:
        """Every event so far once the one numbered last_id came, after a pause in which
        duplicates would show."""
        deadline = time.monotonic() + WAIT
        while not self.seen or self.seen[-1].id < last_id:
            self.seen.append(self.events.get(timeout=max(0.01, deadline - time.monotonic())))
        time.sleep(0.5)
        while not self.events.empty():
            self.seen.append(self.events.get())
        return list(self.seen)

    def close(self) -> None:
        self.stream.cancel()
        self.thread.join(WAIT)


@pytest.fixture
def replicas(start_service: StartService, pg_dsn: str) -> tuple[Service, Service]:
    """Two servers on one database."""
    return start_service(store=pg_dsn), start_service(store=pg_dsn)


@pytest.fixture
def clients(replicas: tuple[Service, Service]) -> Iterator[tuple[Client, Client]]:
    a, b = replicas
    with Client(f"127.0.0.1:{a.port}") as on_a, Client(f"127.0.0.1:{b.port}") as on_b:
        yield on_a, on_b


def test_a_watch_on_one_server_streams_the_changes_made_through_the_other(
    clients: tuple[Client, Client],
) -> None:
    on_a, on_b = clients
    # Two items at most: from the third append on, each evicts one, and its eviction event
    # comes before the usage event every append makes.
    on_a.create_conversation("c", settings=ConversationSettings(window_max_items=2))
    on_a.append("c", "turn 0", role="user")
    at_a, at_b = Watcher(on_a, "c"), Watcher(on_b, "c")
    try:
        for k in range(1, 6):
            on_a.append("c", f"turn {k}", role="user" if k % 2 == 0 else "assistant")
        expected = ["usage", "usage"] + ["eviction", "usage"] * 4
        made = at_a.until(10)
        assert [(e.id, e.kind) for e in made] == list(enumerate(expected, start=1))
        streamed = at_b.until(10)
        assert [(e.id, e.kind, e.eviction_seqs) for e in streamed] == [
            (e.id, e.kind, e.eviction_seqs) for e in made
        ]

        # Resumed on B from half-way: the rest, then what A does next.
        resumed = Watcher(on_b, "c", after=5)
        try:
            on_a.append("c", "after the resume", role="user")
            rest = resumed.until(12)
            assert [e.id for e in rest] == list(range(6, 13))
            assert [e.kind for e in rest[-2:]] == ["eviction", "usage"]
            # And the other way round: B's change reaches the watchers on A.
            on_b.append("c", "through the other server", role="assistant")
            assert [e.id for e in at_a.until(14)] == list(range(1, 15))
            assert [e.id for e in at_b.until(14)] == list(range(1, 15))
            assert [e.id for e in resumed.until(14)] == list(range(6, 15))
        finally:
            resumed.close()
    finally:
        at_a.close()
        at_b.close()
