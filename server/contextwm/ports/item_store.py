"""The items of the store: appends and compactions committed in one transaction, and reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from contextwm.domain.facts import Fact
from contextwm.domain.history import CompactionRecord, ContextEdit, Event
from contextwm.domain.items import Flag, Item, ItemFilter, ItemState


@dataclass(frozen=True, slots=True)
class ItemVectors:
    """Vectors of some of one conversation's items, and the model that made them."""

    model: str
    seqs: Sequence[int]
    vectors: Sequence[npt.NDArray[np.float32]]


class ItemStore(Protocol):
    """Writes and reads a conversation's items; durable once a call returns."""

    def find_idempotent(self, key: int, idempotency_keys: Sequence[str]) -> dict[str, Item]: ...

    def commit_append(
        self,
        key: int,
        items: Sequence[Item],
        idempotency_keys: Sequence[str | None],
        evicted: Sequence[int],
        token_limit: int,
        state: str,
        *,
        facts: Sequence[Fact] = (),
        edits: Sequence[ContextEdit] = (),
        events: Sequence[Event] = (),
        vectors: ItemVectors | None = None,
        appended_at: float | None = None,
    ) -> None:
        """Inserts items, archives the evicted seqs and records the items' facts, context
        edits, events and (when given) vectors, in one transaction; appended_at (None: not an
        append) is when the conversation was last appended to, which retention's inactivity
        is measured from."""
        ...

    def commit_compaction(
        self,
        key: int,
        marker: Item,
        record: CompactionRecord,
        edit: ContextEdit,
        evicted: Sequence[int],
        events: Sequence[Event],
    ) -> None:
        """Adds the marker, moves earlier window and archived items behind the compaction
        and starts the active context at the marker, in one transaction."""
        ...

    def set_flags(self, key: int, seq: int, flags: Flag) -> None: ...

    def get_items(self, key: int, seqs: Sequence[int]) -> dict[int, Item]: ...

    def file_paths(self, key: int, limit: int) -> list[str]:
        """Distinct file paths the conversation's items refer to (reverted ones aside), the
        most recently referenced first."""
        ...

    def list_items(
        self, key: int, after_seq: int, limit: int, states: Sequence[ItemState]
    ) -> list[Item]: ...

    def window_items(
        self, key: int, model: str
    ) -> list[tuple[Item, npt.NDArray[np.float32] | None]]:
        """Items in the window, in seq order, with their vectors where written."""
        ...

    def filtered_seqs(
        self, key: int, flt: ItemFilter, states: Sequence[ItemState], limit: int
    ) -> npt.NDArray[np.int64]:
        """Seqs of the newest items (up to limit) in these states that match the filter."""
        ...
