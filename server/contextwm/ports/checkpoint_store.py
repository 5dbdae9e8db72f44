"""The agent loop's checkpoints in the store: the item states they keep, and restores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from contextwm.domain.history import Checkpoint, Event, StateRun


class CheckpointStore(Protocol):
    """Named checkpoints of a conversation; durable once a call returns."""

    def item_state_runs(self, key: int) -> list[StateRun]: ...

    def checkpoints(self, key: int) -> list[Checkpoint]: ...

    def checkpoint(self, key: int, name: str) -> Checkpoint | None: ...

    def add_checkpoint(self, key: int, checkpoint: Checkpoint, events: Sequence[Event]) -> None:
        """Raises AlreadyExists for a name in use."""
        ...

    def commit_restore(
        self, key: int, checkpoint: Checkpoint, now: float, events: Sequence[Event]
    ) -> tuple[int, int]:
        """Back to the checkpoint's states; returns (items reverted, edits undone)."""
        ...
