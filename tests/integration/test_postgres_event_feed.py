"""The PostgreSQL store's event feed: events one store instance commits reach the watchers of
another (a second server on the same database) once each and in order, only once committed,
and still after the database crashed and came back."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from contextwm.adapters.postgres.store import PostgresStore
from contextwm.conversations.events import EventHub, Subscription
from contextwm.domain.errors import Unavailable
from contextwm.domain.history import Event, EventKind
from postgres_server import PostgresServer
from stores import new_conversation

WAIT = 20.0


class Collected:
    """The numbers a subscription yields, gathered on a thread."""

    def __init__(self, sub: Subscription) -> None:
        self.sub = sub
        self.numbers: list[int] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for event in self.sub:
            self.numbers.append(event.number)

    def wait_for(self, count: int) -> list[int]:
        """The numbers once `count` arrived, after a pause in which duplicates would show."""
        deadline = time.monotonic() + WAIT
        while len(self.numbers) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        return list(self.numbers)

    def close(self) -> None:
        self.sub.close()
        self.thread.join(WAIT)


def commit(store: PostgresStore, key: int, *numbers: int) -> None:
    """Events with these numbers, written in one transaction of the conversation's hold (as a
    change writes them); retried while the database comes back."""
    events = [Event(n, time.time(), EventKind.EVICTION, (n,)) for n in numbers]
    deadline = time.monotonic() + WAIT
    while True:
        try:
            with store.hold(key):
                store.record_events(key, events)
            return
        except Unavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def follow(store: PostgresStore) -> tuple[EventHub, list[int]]:
    """A hub on the store as the engine builds it, and a log of its resyncs."""
    hub = EventHub(store)
    resyncs: list[int] = []

    def missed() -> None:
        hub.resync()
        resyncs.append(1)

    store.follow_events(hub.committed, missed)
    return hub, resyncs


def test_events_committed_by_one_store_reach_the_watchers_of_another_once_in_order(
    shared_stores: tuple[PostgresStore, PostgresStore],
) -> None:
    writer, reader = shared_stores
    key = new_conversation(writer)
    other = new_conversation(writer, "c2")
    hub, _ = follow(reader)
    collected = Collected(hub.subscribe(key, 0))
    try:
        for n in range(1, 6):
            commit(writer, key, n)
        commit(writer, other, 1, 2)  # another conversation's: not for this watcher
        commit(writer, key, 6, 7, 8)
        assert collected.wait_for(8) == list(range(1, 9))
        # The reader's own events, published after its commit and announced too: once.
        events = [Event(n, time.time(), EventKind.EVICTION, (n,)) for n in (9, 10)]
        with reader.hold(key):
            reader.record_events(key, events)
        hub.publish(key, events)
        commit(writer, key, 11)
        assert collected.wait_for(11) == list(range(1, 12))
    finally:
        collected.close()


def test_only_committed_events_are_announced(
    shared_stores: tuple[PostgresStore, PostgresStore],
) -> None:
    writer, reader = shared_stores
    key = new_conversation(writer)
    heard: list[tuple[int, int]] = []
    ready = threading.Event()

    def missed() -> None:
        ready.set()

    reader.follow_events(lambda k, n: heard.append((k, n)), missed)
    assert ready.wait(WAIT)  # listening
    with writer.hold(key):
        writer.record_events(key, [Event(1, time.time(), EventKind.EVICTION, (1,))])
        time.sleep(0.5)
        assert heard == []  # not before the commit
    with pytest.raises(RuntimeError), writer.hold(key):
        writer.record_events(key, [Event(n, time.time(), EventKind.EVICTION, (n,)) for n in (2, 3)])
        raise RuntimeError("the change fails: its events roll back")
    commit(writer, key, 2)
    deadline = time.monotonic() + WAIT
    while len(heard) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    # Announcements heard in one batch come as each conversation's latest (the hub reads the
    # store for the numbers between): 1 may come alone or with 2; 3, rolled back, never.
    assert heard in ([(key, 1), (key, 2)], [(key, 2)])


def test_the_feed_reconnects_after_the_database_restarts_and_catches_up() -> None:
    database = PostgresServer()  # of the test's own: it is crashed and restarted
    dsn = database.create_database("feed")
    writer, reader = PostgresStore(dsn), PostgresStore(dsn)
    try:
        key = new_conversation(writer)
        hub, resyncs = follow(reader)
        collected = Collected(hub.subscribe(key, 0))
        try:
            commit(writer, key, 1, 2)
            assert collected.wait_for(2) == [1, 2]
            for round_ in range(2):
                database.stop("immediate")
                database.start()
                # Written at once: the listener is still reconnecting, so these are caught
                # up from the store rather than announced.
                first = 3 + 3 * round_
                commit(writer, key, first)
                commit(writer, key, first + 1, first + 2)
                assert collected.wait_for(first + 2) == list(range(1, first + 3))
            assert wait_until(lambda: len(resyncs) >= 3)  # the first connection, and two more
            commit(writer, key, 9)  # announced on the new connection
            assert collected.wait_for(9) == list(range(1, 10))
        finally:
            collected.close()
    finally:
        reader.close()
        writer.close()
        database.close()


def test_closing_the_store_stops_its_listener(pg_dsn: str) -> None:
    def listeners() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "contextwm-event-feed"}

    store = PostgresStore(pg_dsn)
    before = listeners()
    follow(store)
    assert len(listeners() - before) == 1
    store.close()
    assert listeners() - before == set()


def wait_until(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
