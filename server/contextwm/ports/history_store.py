"""The agent-loop part of the Store port: facts, context edits, compactions, checkpoints, events."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from contextwm.domain.active import ActiveEntry
from contextwm.domain.facts import Fact
from contextwm.domain.history import Checkpoint, CompactionRecord, ContextEdit, Event, StateRun
from contextwm.domain.usage import Reported


class HistoryStore(Protocol):
    """Durable once a call returns; nothing here deletes an item."""

    def facts(self, key: int) -> list[Fact]:
        """Facts of the conversation's items that are not reverted, in seq order."""
        ...

    def active_entries(self, key: int, start: int) -> list[ActiveEntry]:
        """Items from seq start on that are not reverted, in seq order."""
        ...

    def whole_file_copies(self, key: int) -> dict[str, int]:
        """Per path, the newest item (not reverted) that holds the whole file."""
        ...

    def edits(
        self, key: int, *, after_id: int = 0, limit: int = -1, live_only: bool = False
    ) -> list[ContextEdit]: ...

    def reverted_among(self, key: int, seqs: Sequence[int]) -> set[int]:
        """Those of these seqs whose items are reverted."""
        ...

    def max_edit_id(self, key: int) -> int: ...

    def compactions(
        self, key: int, marker_seqs: Sequence[int] | None = None, *, live_only: bool = False
    ) -> list[CompactionRecord]: ...

    def item_state_runs(self, key: int) -> list[StateRun]: ...

    def checkpoints(self, key: int) -> list[Checkpoint]: ...

    def checkpoint(self, key: int, name: str) -> Checkpoint | None: ...

    def events_after(self, key: int, after: int, limit: int) -> list[Event]: ...

    def first_event_number(self, key: int) -> int | None: ...

    def record_events(self, key: int, events: Sequence[Event]) -> None: ...

    def prune_events(self, older_than: float) -> int:
        """Drops events older than the retention; returns how many."""
        ...

    def set_reported(self, key: int, reported: Reported | None) -> None: ...

    def add_checkpoint(self, key: int, checkpoint: Checkpoint, events: Sequence[Event]) -> None:
        """Raises AlreadyExists for a name in use."""
        ...

    def commit_truncation(
        self, key: int, edit: ContextEdit, archive: Sequence[int], events: Sequence[Event]
    ) -> None:
        """Records a truncation; its window items (archive) become archived."""
        ...

    def commit_restore(
        self, key: int, checkpoint: Checkpoint, now: float, events: Sequence[Event]
    ) -> tuple[int, int]:
        """Back to the checkpoint's states; returns (items reverted, edits undone)."""
        ...
