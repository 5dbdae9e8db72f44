"""The agent loop's history in the store: facts, context edits, compactions, reported usage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from contextwm.domain.active import ActiveEntry
from contextwm.domain.facts import Fact
from contextwm.domain.history import CompactionRecord, ContextEdit, Event
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

    def set_reported(self, key: int, reported: Reported | None) -> None: ...

    def commit_truncation(
        self, key: int, edit: ContextEdit, archive: Sequence[int], events: Sequence[Event]
    ) -> None:
        """Records a truncation; its window items (archive) become archived."""
        ...
