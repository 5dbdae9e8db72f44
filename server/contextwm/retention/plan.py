"""What a retention policy removes from one conversation, decided from its archived items
and what must stay: pure logic, no store and no locks."""

from __future__ import annotations

import bisect
import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from contextwm.domain.history import Checkpoint
from contextwm.domain.items import ItemState
from contextwm.domain.retention import RetentionPolicy
from contextwm.ports.retention_store import ArchivedRow


class Reason(enum.StrEnum):
    """Why an item limit removes an item (inactivity removes whole conversations)."""

    AGE = "age"
    COUNT = "count"


@dataclass(frozen=True, slots=True)
class Kept:
    """Seqs the item limits never remove: the active context of a conversation that compacts
    (from its last marker on) and what a checkpoint restore would bring back into the window
    or such an active context. Before any compaction the active context is the whole
    conversation, which would keep the archive unbounded: then only windows are kept.

    Attributes:
        active_start: the first seq of the active context (the last compaction marker; 0
            before any compaction).
        ranges: inclusive (first, last) seq ranges, sorted, not overlapping.
    """

    active_start: int
    ranges: tuple[tuple[int, int], ...] = ()

    def __contains__(self, seq: object) -> bool:
        if not isinstance(seq, int):
            return False
        if self.active_start and seq >= self.active_start:
            return True
        at = bisect.bisect_right(self.ranges, seq, key=lambda r: r[0]) - 1
        return at >= 0 and self.ranges[at][0] <= seq <= self.ranges[at][1]


def kept_for(active_start: int, checkpoints: Iterable[Checkpoint]) -> Kept:
    """What must stay in a conversation whose active context starts at active_start.

    A restore of a checkpoint puts its window items back in the window and starts the active
    context at its start again (items after the checkpoint are reverted): both stay.

    Args:
        active_start: the conversation's active context start.
        checkpoints: its checkpoints.

    Returns:
        The seqs kept, as ranges.
    """
    ranges: list[tuple[int, int]] = []
    for checkpoint in checkpoints:
        if checkpoint.active_start:
            ranges.append((checkpoint.active_start, checkpoint.last_seq))
        ranges += [(r.first, r.last) for r in checkpoint.states if r.state is ItemState.WINDOW]
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return Kept(active_start, tuple(merged))


def removable(row: ArchivedRow, policy: RetentionPolicy, kept: Kept) -> bool:
    """Whether the item limits may remove this archived item at all: it is embedded (the
    indexer may be embedding the others this moment), not kept, and pinned only if the
    policy allows it."""
    return row.embedded and row.seq not in kept and (bool(policy.remove_pinned) or not row.pinned)


def too_old(row: ArchivedRow, policy: RetentionPolicy, now: float) -> bool:
    """Whether the item is older than the policy's maximum age (off: never)."""
    return bool(policy.max_age_seconds) and row.timestamp < now - (policy.max_age_seconds or 0.0)


@dataclass(frozen=True, slots=True)
class ItemPlan:
    """The seqs the item limits remove, by reason: by age in seq order, by count oldest
    first (the order they are removed in)."""

    by_age: tuple[int, ...] = ()
    by_count: tuple[int, ...] = ()


def plan_items(
    rows: Sequence[ArchivedRow], policy: RetentionPolicy, kept: Kept, now: float
) -> ItemPlan:
    """The archived items a resolved policy removes.

    Rules: an item older than max_age_seconds goes (by age); then, while more than
    max_archived_items archived items would remain, the oldest of the rest go (by count),
    oldest by timestamp, then seq. Only removable items go (see `removable`); kept, pinned
    or unembedded ones still count towards max_archived_items.

    Args:
        rows: every archived and compacted item of the conversation.
        policy: the conversation's resolved policy (0 switches a limit off).
        kept: what must stay.
        now: the wall-clock time ages are measured against.

    Returns:
        The plan.
    """
    candidates = [r for r in rows if removable(r, policy, kept)]
    by_age = [r.seq for r in candidates if too_old(r, policy, now)]
    limit = policy.max_archived_items or 0
    excess = len(rows) - len(by_age) - limit if limit else 0
    aged = set(by_age)
    rest = sorted((r for r in candidates if r.seq not in aged), key=lambda r: (r.timestamp, r.seq))
    by_count = [r.seq for r in rest[: max(excess, 0)]]
    return ItemPlan(tuple(by_age), tuple(by_count))


def inactive(last_active: float, policy: RetentionPolicy, now: float) -> bool:
    """Whether a conversation last appended to at last_active goes whole (off: never)."""
    return bool(policy.inactive_seconds) and last_active < now - (policy.inactive_seconds or 0.0)
