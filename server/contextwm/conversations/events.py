"""Live delivery of a conversation's events to its watchers (the store keeps them for replay).

Events reach the hub twice over when the store is shared: published by this server after its
commit, and announced by the store's feed for every server's commits (this one's included).
The hub hands each event number to a subscription once and in order, whichever way it came
first, and reads the store when the numbers it was given skip some."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator, Sequence

from contextwm.domain.history import Event
from contextwm.ports.event_store import EventStore

log = logging.getLogger(__name__)

# How often a waiting watcher wakes to see whether it was closed.
POLL_SECONDS = 1.0
# Events read from the store per query when catching up.
PAGE = 500


class Subscription:
    """Events of one conversation numbered after `start`, in order, each once, until closed."""

    def __init__(self, hub: EventHub, key: int, start: int) -> None:
        self._hub = hub
        self.key = key
        self.start = start
        self._queue: queue.SimpleQueue[Event | None] = queue.SimpleQueue()
        self.closed = threading.Event()

    def put(self, event: Event) -> None:
        self._queue.put(event)

    def close(self) -> None:
        """Ends iteration (safe from any thread, any number of times)."""
        if not self.closed.is_set():
            self.closed.set()
            self._queue.put(None)
            self._hub.unsubscribe(self)

    def __iter__(self) -> Iterator[Event]:
        while not self.closed.is_set():
            try:
                event = self._queue.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            if event is None:
                return
            yield event


class _Feed:
    """The subscriptions of one conversation, and the last event number handed to them."""

    def __init__(self, last: int) -> None:
        self.last = last
        self.subscriptions: set[Subscription] = set()


class EventHub:
    """Fan-out of committed events to subscriptions, by conversation key."""

    def __init__(self, store: EventStore) -> None:
        self._store = store
        # Guards the feeds, their numbers and the handing out: a delivery is a few queue
        # puts, never a store read (those happen outside it).
        self._lock = threading.Lock()
        self._feeds: dict[int, _Feed] = {}

    def subscribe(self, key: int, since: int) -> Subscription:
        """A subscription to the conversation's events after its `start`: the last number
        handed to its other subscriptions, or `since` (the last event the caller knows to be
        committed) for the first. Then call catch_up(key): events committed elsewhere and not
        yet announced are read from the store."""
        with self._lock:
            feed = self._feeds.get(key)
            if feed is None:
                feed = self._feeds[key] = _Feed(since)
            sub = Subscription(self, key, feed.last)
            feed.subscriptions.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            feed = self._feeds.get(sub.key)
            if feed is not None:
                feed.subscriptions.discard(sub)
                if not feed.subscriptions:
                    del self._feeds[sub.key]

    def count(self) -> int:
        with self._lock:
            return sum(len(f.subscriptions) for f in self._feeds.values())

    def publish(self, key: int, events: Sequence[Event]) -> None:
        """Hands committed events to the conversation's watchers (call after the commit).
        Never raises: the change is made whatever happens to its watchers."""
        if not events:
            return
        with self._lock:
            feed = self._feeds.get(key)
            if feed is None or self._deliver(feed, events, skips=False):
                return
        # Some events before these were not handed out yet (committed by another server and
        # not announced so far, say): the store has them all.
        try:
            self.catch_up(key, events[-1].number)
        except Exception:
            log.exception("events of conversation %d could not be read for its watchers", key)

    def committed(self, key: int, last: int) -> None:
        """Events of the conversation up to number `last` were committed (by any server):
        those its watchers lack are read from the store and handed out.

        Raises:
            Unavailable: the store cannot be reached (nothing was skipped).
        """
        self.catch_up(key, last)

    def resync(self) -> None:
        """Catches every watched conversation up with the store (news may have been lost).

        Raises:
            Unavailable: the store cannot be reached.
        """
        with self._lock:
            keys = list(self._feeds)
        for key in keys:
            self.catch_up(key)

    def catch_up(self, key: int, until: int | None = None) -> None:
        """Hands out the conversation's stored events after the last one handed out (up to
        `until`, when given, as that many are known committed).

        Raises:
            Unavailable: the store cannot be reached.
        """
        while True:
            with self._lock:
                feed = self._feeds.get(key)
                if feed is None or (until is not None and feed.last >= until):
                    return
                after = feed.last
            page = self._store.events_after(key, after, PAGE)
            with self._lock:
                # A feed closed and made again meanwhile has numbers of its own.
                if self._feeds.get(key) is not feed:
                    return
                self._deliver(feed, page, skips=True)
            if len(page) < PAGE:
                return

    @staticmethod
    def _deliver(feed: _Feed, events: Sequence[Event], *, skips: bool) -> bool:
        """Hands the events after feed.last to its subscriptions, in order (self._lock held);
        False when they skip numbers. skips: they come from the store, read after a number
        no later than feed.last, so a skip is events already dropped by retention."""
        for event in events:
            if event.number <= feed.last:
                continue  # handed out already, the other way
            if event.number != feed.last + 1 and not skips:
                return False
            for sub in feed.subscriptions:
                sub.put(event)
            feed.last = event.number
        return True

    def close(self, key: int | None = None) -> None:
        """Ends the subscriptions of one conversation (deleted), or all (shutdown)."""
        with self._lock:
            if key is None:
                subs = [s for feed in self._feeds.values() for s in feed.subscriptions]
            else:
                feed = self._feeds.get(key)
                subs = list(feed.subscriptions) if feed is not None else []
        for sub in subs:
            sub.close()
