"""What retention reads from the store (activity, archived rows) and the removal of items."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from contextwm.ports.conversation_store import ConversationRecord


@dataclass(frozen=True, slots=True)
class ConversationActivity:
    """A conversation and when it was last appended to (its creation, before any append)."""

    record: ConversationRecord
    last_active: float


@dataclass(frozen=True, slots=True)
class ArchivedRow:
    """An archived or compacted item, as retention judges it."""

    seq: int
    timestamp: float
    pinned: bool
    embedded: bool  # has a vector of the current model: the index holds it


@dataclass(frozen=True, slots=True)
class RemovedRows:
    count: int
    tokens: int


class RetentionStore(Protocol):
    """Reads what retention judges, and removes items for good; durable once a call returns."""

    def conversation_activity(self, namespace: str | None) -> list[ConversationActivity]:
        """The conversations of a namespace (None: of all), by namespace and id, with when
        each was last appended to."""
        ...

    def last_active(self, key: int) -> float | None:
        """When the conversation was last appended to (None: no such conversation)."""
        ...

    def archived_rows(
        self, key: int, model: str, seqs: Sequence[int] | None = None
    ) -> list[ArchivedRow]:
        """The archived and compacted items (among seqs, when given), in seq order."""
        ...

    def remove_items(self, key: int, seqs: Sequence[int]) -> RemovedRows:
        """Deletes those of these items that are archived or compacted, with their full-text
        rows, vectors and facts, and counts them on the conversation (its seqs then have
        gaps), in one transaction."""
        ...
