"""The context history of a conversation as values: edits, compactions, checkpoints, events."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from contextwm.domain.facts import Fact
from contextwm.domain.items import ItemState
from contextwm.domain.usage import Reported, Usage


class EditKind(enum.StrEnum):
    COMPACTION = "compaction"
    TRUNCATION = "truncation"
    DUPLICATE_READ = "duplicate_read"


@dataclass(frozen=True, slots=True)
class ContextEdit:
    """One recorded change to the active context, as ListContextEdits lists it. id is 0 until
    stored. A checkpoint restore sets undone_at; nothing is ever deleted."""

    id: int
    at: float
    kind: EditKind
    seqs: tuple[int, ...]
    related_seq: int = 0
    tokens_saved: int = 0
    detail: str = ""
    undone_at: float | None = None


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    number: int
    at: float
    summary: str
    extractive: bool
    marker_seq: int
    items_archived: int
    tokens_before: int
    tokens_after: int
    ledger: str
    facts: tuple[Fact, ...] = ()
    undone_at: float | None = None


@dataclass(frozen=True, slots=True)
class StateRun:
    """Items first..last (by seq) that were all in one state."""

    first: int
    last: int
    state: ItemState


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What a restore needs to put a conversation back as it was.

    Item states are kept as runs (a long conversation is mostly one archived run), and
    edits by the highest edit id at the time: every later edit is undone by a restore.
    """

    name: str
    at: float
    last_seq: int
    active_tokens: int
    compactions: int
    edit_id: int
    active_start: int
    token_limit: int
    state: str
    states: tuple[StateRun, ...] = ()
    reported: Reported | None = None


class EventKind(enum.StrEnum):
    USAGE = "usage"
    EVICTION = "eviction"
    COMPACTION = "compaction"
    TRUNCATION = "truncation"
    DUPLICATE_READ = "duplicate_read"
    CHECKPOINT_CREATED = "checkpoint_created"
    CHECKPOINT_RESTORED = "checkpoint_restored"
    ERASURE = "erasure"
    # Never stored: tells a watcher that retention dropped events it asked for.
    GAP = "gap"


@dataclass(frozen=True, slots=True)
class CheckpointChange:
    checkpoint: Checkpoint
    reverted_items: int = 0


@dataclass(frozen=True, slots=True)
class Erased:
    """What an erasure took from a conversation: the seqs of its items that are gone."""

    seqs: tuple[int, ...]


EventPayload = (
    Usage | tuple[int, ...] | CompactionRecord | ContextEdit | CheckpointChange | Erased | int
)


@dataclass(frozen=True, slots=True)
class Event:
    """Something a watcher hears about. number is per conversation, from 1, in commit order."""

    number: int
    at: float
    kind: EventKind
    payload: EventPayload = field(default=0)
