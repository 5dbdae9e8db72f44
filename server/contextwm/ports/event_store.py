"""A conversation's events kept in the store, for watchers to replay."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from contextwm.domain.history import Event


class EventStore(Protocol):
    """Events by conversation and number; durable once a call returns."""

    def events_after(self, key: int, after: int, limit: int) -> list[Event]: ...

    def first_event_number(self, key: int) -> int | None: ...

    def record_events(self, key: int, events: Sequence[Event]) -> None: ...

    def prune_events(self, older_than: float) -> int:
        """Drops events older than the retention; returns how many."""
        ...
