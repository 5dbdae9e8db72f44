"""Live delivery of a conversation's events to its watchers (the store keeps them for replay)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator, Sequence

from contextwm.domain.history import Event

# How often a waiting watcher wakes to see whether it was closed.
POLL_SECONDS = 1.0


class Subscription:
    """Events of one conversation published after subscribing, in order, until closed."""

    def __init__(self, hub: EventHub, key: int) -> None:
        self._hub = hub
        self.key = key
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


class EventHub:
    """Fan-out of committed events to subscriptions, by conversation key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscriptions: dict[int, set[Subscription]] = {}

    def subscribe(self, key: int) -> Subscription:
        sub = Subscription(self, key)
        with self._lock:
            self._subscriptions.setdefault(key, set()).add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            subs = self._subscriptions.get(sub.key)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self._subscriptions[sub.key]

    def count(self) -> int:
        with self._lock:
            return sum(len(s) for s in self._subscriptions.values())

    def publish(self, key: int, events: Sequence[Event]) -> None:
        """Hands committed events to the conversation's watchers (call after the commit)."""
        if not events:
            return
        with self._lock:
            subs = list(self._subscriptions.get(key, ()))
        for sub in subs:
            for event in events:
                sub.put(event)

    def close(self, key: int | None = None) -> None:
        """Ends the subscriptions of one conversation (deleted), or all (shutdown)."""
        with self._lock:
            if key is None:
                subs = [s for group in self._subscriptions.values() for s in group]
            else:
                subs = list(self._subscriptions.get(key, ()))
        for sub in subs:
            sub.close()
