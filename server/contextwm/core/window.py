"""The bounded window of one conversation and the choice of what to evict from it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from contextwm.core.model import ConversationSettings, Flag, Item, ScoreParts
from contextwm.core.scoring import Clock, relevance

Vector = npt.NDArray[np.float32]


class WindowEntry:
    """An item in the window and its vector, which arrives after the append returns."""

    __slots__ = ("item", "vector")

    def __init__(self, item: Item, vector: Vector | None = None) -> None:
        self.item = item
        self.vector = vector


@dataclass(frozen=True, slots=True)
class Eviction:
    seq: int
    score: float
    parts: ScoreParts


class Window:
    """The items in a conversation's window, in seq order, with their token total."""

    def __init__(self, entries: Sequence[WindowEntry] = ()) -> None:
        self._entries: dict[int, WindowEntry] = {e.item.seq: e for e in entries}
        self.tokens = sum(e.item.token_count for e in entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[WindowEntry]:
        return iter(self._entries.values())

    def __contains__(self, seq: object) -> bool:
        return seq in self._entries

    def get(self, seq: int) -> WindowEntry | None:
        return self._entries.get(seq)

    def add(self, entry: WindowEntry) -> None:
        self._entries[entry.item.seq] = entry
        self.tokens += entry.item.token_count

    def remove(self, seq: int) -> WindowEntry:
        entry = self._entries.pop(seq)
        self.tokens -= entry.item.token_count
        return entry

    def newest(self, n: int) -> list[WindowEntry]:
        """The n most recently appended entries, oldest first."""
        entries = list(self._entries.values())
        return entries[-n:] if n > 0 else []

    def focus_vector(self, n: int) -> Vector | None:
        """The mean direction of the newest n embedded items: what the conversation is about now."""
        vectors = [e.vector for e in reversed(list(self._entries.values())) if e.vector is not None]
        if not vectors:
            return None
        mean = np.mean(np.stack(vectors[:n]), axis=0)
        norm = float(np.linalg.norm(mean))
        return (mean / norm).astype(np.float32) if norm > 0 else None

    def scores(
        self, settings: ConversationSettings, clock: Clock, focus: Vector | None
    ) -> dict[int, tuple[float, ScoreParts]]:
        """Relevance of every entry. An item whose vector has not arrived yet gets the mean
        similarity of the others, so waiting for the embedder neither shields nor dooms it."""
        sims: dict[int, float] = {}
        if focus is not None:
            for e in self._entries.values():
                if e.vector is not None:
                    sims[e.item.seq] = float(np.dot(e.vector, focus))
        neutral = float(np.mean(list(sims.values()))) if sims else 0.0
        return {
            e.item.seq: relevance(
                settings,
                clock,
                timestamp=e.item.timestamp,
                seq=e.item.seq,
                role=e.item.role,
                flags=e.item.flags,
                similarity=sims.get(e.item.seq, neutral),
            )
            for e in self._entries.values()
        }


def choose_evictions(
    window: Window,
    *,
    token_limit: int,
    item_limit: int,
    settings: ConversationSettings,
    clock: Clock,
    focus: Vector | None,
) -> list[Eviction]:
    """What to evict, in order, so that the window fits both limits. Does not change window.

    Order: an item larger than the whole token limit first (it can never fit, and keeping it
    would push everything else out); then the lowest relevance score, oldest first on ties;
    pinned items only when nothing else is left, oldest first.
    """
    tokens, count = window.tokens, len(window)
    if tokens <= token_limit and count <= item_limit:
        return []
    scored = window.scores(settings, clock, focus)

    def rank(e: WindowEntry) -> tuple[int, int, float, int]:
        oversized = e.item.token_count > token_limit
        pinned = bool(e.item.flags & Flag.PINNED)
        score = scored[e.item.seq][0]
        # Pinned items rank by age alone. Scores are compared at 1e-9 so that sums which only
        # differ in rounding count as ties, and ties go to the older item.
        rounded = 0.0 if pinned else round(score, 9)
        return (0 if oversized else 1, 1 if pinned else 0, rounded, e.item.seq)

    evictions: list[Eviction] = []
    for entry in sorted(window, key=rank):
        if tokens <= token_limit and count <= item_limit:
            break
        score, parts = scored[entry.item.seq]
        evictions.append(Eviction(entry.item.seq, score, parts))
        tokens -= entry.item.token_count
        count -= 1
    return evictions
