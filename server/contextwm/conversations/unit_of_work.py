"""One unit of work per state change of a conversation: hold its lock (and the store's hold of
it, against other servers sharing the store), change memory, record events, commit them with
the change in one store transaction, publish them once committed, and put memory back to the
store's truth if anything fails on the way."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from contextwm.conversations.events import EventHub
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.conversations.runtimes import Runtimes
from contextwm.domain.history import Event, EventKind, EventPayload

T = TypeVar("T")


class Change:
    """A change in progress on one conversation (its lock held). Call touch() before changing
    memory, emit() the events the change makes, and commit() with the store write."""

    def __init__(self, rt: ConversationRuntime, clock: Callable[[], float]) -> None:
        self.rt = rt
        self._clock = clock
        self._staged: list[tuple[EventKind, EventPayload]] = []
        self.committed: list[Event] = []
        self.touched = False

    def touch(self) -> None:
        """From here on memory changes: a failure reloads the conversation from the store.
        (A check that fails before changes nothing, and costs no reload.)"""
        self.touched = True

    def emit(self, kind: EventKind, payload: EventPayload) -> None:
        """An event of this change, numbered and stored with the next commit."""
        self._staged.append((kind, payload))

    def commit(self, write: Callable[[list[Event]], T]) -> T:
        """Numbers the emitted events and runs write with them: the store transaction that
        makes the change durable, events included. The conversation's event counter moves on
        only once the write succeeded."""
        at = self._clock()
        events = [
            Event(self.rt.last_event + n, at, kind, payload)
            for n, (kind, payload) in enumerate(self._staged, start=1)
        ]
        self.touched = True  # the write itself may fail half-way
        result = write(events)
        self._staged = []
        if events:
            self.rt.last_event = events[-1].number
        self.committed.extend(events)
        return result


class UnitOfWork:
    """Opens changes on the engine's runtimes and publishes what they commit."""

    def __init__(self, runtimes: Runtimes, events: EventHub, clock: Callable[[], float]) -> None:
        self._runtimes = runtimes
        self._events = events
        self._clock = clock

    @contextmanager
    def change(self, rt: ConversationRuntime) -> Iterator[Change]:
        """A change of rt under its lock; its committed events are published when the block
        ends, still under the lock so that watchers see changes in their order.

        Raises:
            NotFound: the conversation was deleted meanwhile.
        """
        with self._runtimes.holding(rt):
            change = Change(rt, self._clock)
            try:
                # Held in the store too: other servers sharing it wait, and the change's
                # writes commit together when the block ends.
                with self._runtimes.held(rt):
                    yield change
                    if change._staged:
                        raise RuntimeError("a change emitted events but never committed them")
            except BaseException:
                if change.touched:
                    self._runtimes.reload(rt)
                raise
            self._events.publish(rt.key, change.committed)
