"""Erasure in the store: the items a filter matches, what a conversation holds before it is
deleted, and the removal of items with every row that holds their text, in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from contextwm.domain.history import Checkpoint, CompactionRecord, ContextEdit, Event
from contextwm.domain.items import Item, ItemFilter
from contextwm.domain.workspace_files import SessionState


@dataclass(frozen=True, slots=True)
class ItemText:
    """An item's text and the file it was read from, if any (the server caches files)."""

    seq: int
    content: str
    path: str | None = None


@dataclass(frozen=True, slots=True)
class MarkerText:
    """A compaction marker item's new text (its stored vector goes: it is embedded again)."""

    seq: int
    content: str
    tokens: int


@dataclass(frozen=True, slots=True)
class ErasureWrite:
    """Everything one erasure changes in one conversation.

    Attributes:
        seqs: the items to delete, with their vectors, postings, facts and claims.
        compactions: compaction records to store instead of the ones with the same
            marker_seq.
        markers: compaction marker items whose text changes.
        edits: context edits to store instead of the ones with the same id.
        dropped_edits: ids of context edits to delete.
        events: stored events to keep instead of the ones with the same number.
        dropped_events: numbers of stored events to delete.
        checkpoints: checkpoints to store instead of the ones with the same name.
        session: the session to store instead, when it changes.
    """

    seqs: tuple[int, ...]
    compactions: tuple[CompactionRecord, ...] = ()
    markers: tuple[MarkerText, ...] = ()
    edits: tuple[ContextEdit, ...] = ()
    dropped_edits: tuple[int, ...] = ()
    events: tuple[Event, ...] = ()
    dropped_events: tuple[int, ...] = ()
    checkpoints: tuple[Checkpoint, ...] = ()
    session: SessionState | None = None


@dataclass(frozen=True, slots=True)
class ErasedRows:
    """Rows an erasure deleted, as the store counts them.

    Attributes:
        items: item rows.
        tokens: their token counts, summed.
        vectors: vector rows (the items' and the rewritten markers').
        postings: (item, term) postings of the deleted items, counted alike in both stores.
        facts: fact rows.
    """

    items: int = 0
    tokens: int = 0
    vectors: int = 0
    postings: int = 0
    facts: int = 0


@dataclass(frozen=True, slots=True)
class Footprint:
    """What a store holds of one conversation, row by row (what deleting it removes)."""

    items: int = 0
    tokens: int = 0
    vectors: int = 0
    postings: int = 0
    facts: int = 0
    compactions: int = 0
    edits: int = 0
    events: int = 0
    checkpoints: int = 0
    sessions: int = 0


class ErasureStore(Protocol):
    """Durable once a call returns."""

    def erasable_items(self, key: int, flt: ItemFilter) -> list[Item]:
        """The conversation's items in any state that flt matches exactly, compaction markers
        aside (contextwm's own text, rewritten rather than removed), in seq order."""
        ...

    def item_texts(self, key: int, after_seq: int, limit: int) -> list[ItemText]:
        """The conversation's items after after_seq, up to limit of them, in seq order: every
        item, markers included."""
        ...

    def footprint(self, key: int) -> Footprint:
        """What the store holds of the conversation."""
        ...

    def erase(self, key: int, write: ErasureWrite, events: Sequence[Event]) -> ErasedRows:
        """Deletes the items with every row derived from them, rewrites what quoted them,
        counts them on the conversation (its seqs then have gaps) and records the events, in
        one transaction. Items no longer there are skipped."""
        ...

    def scrub(self) -> None:
        """Leaves as little of erased text in the store's files as the store allows, after an
        erasure has committed: SQLite merges its full-text index (whose delete markers still
        hold the terms) and truncates its write-ahead log; PostgreSQL does nothing here (see
        docs/security.md: dead rows wait for VACUUM)."""
        ...
