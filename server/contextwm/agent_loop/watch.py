"""Watching a conversation: the kept events after a given one, then new ones as they are
committed (on this server or another sharing the store), with a gap event where kept events
were already dropped."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from contextwm.conversations.events import Subscription
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.domain.history import Event, EventKind
from contextwm.ports.event_store import EventStore


class Watch:
    """Replays kept events after `after` up to where the subscription starts, then yields
    the subscription's until closed."""

    def __init__(
        self,
        store: EventStore,
        clock: Callable[[], float],
        rt: ConversationRuntime,
        subscription: Subscription,
        after: int,
    ) -> None:
        self._store = store
        self._clock = clock
        self._rt = rt
        self._subscription = subscription
        self._after = after
        self._start = subscription.start

    def close(self) -> None:
        self._subscription.close()

    def __iter__(self) -> Iterator[Event]:
        store = self._store
        last = self._after
        if self._start > last:
            first = store.first_event_number(self._rt.key)
            kept_from = first if first is not None else self._start + 1
            if kept_from > last + 1:
                missed = kept_from - 1 - last
                yield Event(kept_from - 1, self._clock(), EventKind.GAP, missed)
                last = kept_from - 1
            while last < self._start and not self._subscription.closed.is_set():
                page = store.events_after(self._rt.key, last, 500)
                if not page:
                    break
                for event in page:
                    if event.number > self._start:
                        break
                    yield event
                    last = event.number
                else:
                    continue
                break
        for event in self._subscription:
            if event.number <= last:
                continue
            if event.number > last + 1:
                # Read from the store by the hub after retention dropped the ones between.
                yield Event(event.number - 1, self._clock(), EventKind.GAP, event.number - 1 - last)
            yield event
            last = event.number
