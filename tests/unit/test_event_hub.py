"""The event hub hands each event number to a subscription once and in order, whether it was
published by this server, announced by the store's feed, or both, and reads the store for
the numbers it was not given."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from contextwm.conversations.events import EventHub, Subscription
from contextwm.domain.history import Event, EventKind

KEY = 7


class KeptEvents:
    """An EventStore of one conversation's events in a list, counting its reads."""

    def __init__(self) -> None:
        self.kept: list[Event] = []
        self.reads = 0

    def events_after(self, key: int, after: int, limit: int) -> list[Event]:
        self.reads += 1
        return [e for e in self.kept if e.number > after][:limit]

    def first_event_number(self, key: int) -> int | None:
        return self.kept[0].number if self.kept else None

    def record_events(self, key: int, events: Sequence[Event]) -> None:
        self.kept.extend(events)

    def prune_events(self, older_than: float) -> int:
        return 0

    def commit(self, *numbers: int) -> list[Event]:
        events = [Event(n, float(n), EventKind.EVICTION, (n,)) for n in numbers]
        self.record_events(KEY, events)
        return events


def received(sub: Subscription) -> list[int]:
    """The numbers handed to the subscription so far (it is closed once they were taken)."""
    closing = threading.Timer(0.3, sub.close)
    closing.start()
    try:
        return [e.number for e in sub]
    finally:
        closing.cancel()


def test_events_both_published_and_announced_are_handed_out_once_in_order() -> None:
    store = KeptEvents()
    hub = EventHub(store)
    sub = hub.subscribe(KEY, 0)
    hub.publish(KEY, store.commit(1, 2))
    hub.committed(KEY, 2)  # this server's own commit, announced back: nothing to read
    hub.committed(KEY, 3)  # announced before this server publishes it: read from the store
    store.commit(3)
    hub.committed(KEY, 3)
    hub.publish(KEY, store.kept[2:3])  # then published: already handed out
    assert received(sub) == [1, 2, 3]
    # Only the announcement of an event not handed out yet read the store.
    assert store.reads == 2


def test_a_publish_after_unannounced_events_reads_the_ones_before_it() -> None:
    store = KeptEvents()
    hub = EventHub(store)
    sub = hub.subscribe(KEY, 0)
    store.commit(1, 2)  # another server's, not announced yet
    hub.publish(KEY, store.commit(3))
    hub.committed(KEY, 2)  # the late announcement
    assert received(sub) == [1, 2, 3]


def test_a_subscription_starts_where_the_others_are() -> None:
    store = KeptEvents()
    hub = EventHub(store)
    first = hub.subscribe(KEY, 4)
    store.commit(1, 2, 3, 4, 5)
    hub.catch_up(KEY)
    second = hub.subscribe(KEY, 0)  # its own knowledge is stale: the hub's is not
    assert (first.start, second.start) == (4, 5)
    hub.publish(KEY, store.commit(6))
    assert received(first) == [5, 6]
    assert received(second) == [6]


def test_resync_catches_every_watched_conversation_up() -> None:
    store = KeptEvents()
    hub = EventHub(store)
    sub = hub.subscribe(KEY, 0)
    unwatched = hub.subscribe(KEY + 1, 0)
    unwatched.close()
    store.commit(1, 2, 3)
    hub.resync()
    assert received(sub) == [1, 2, 3]
    assert store.reads == 1  # not for the conversation nobody watches any more


def test_events_of_unwatched_conversations_are_not_read() -> None:
    store = KeptEvents()
    hub = EventHub(store)
    hub.committed(KEY, 3)
    hub.publish(KEY, store.commit(1))
    assert store.reads == 0
