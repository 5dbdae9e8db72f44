"""The bounded window of one conversation and the choice of what to evict from it."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice

import numpy as np
import numpy.typing as npt

from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.items import Flag, Item, ScoreParts
from contextwm.window.scoring import Clock, relevance_many

Vector = npt.NDArray[np.float32]
_PINNED = int(Flag.PINNED)


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
        if n <= 0:
            return []
        entries = list(islice(reversed(self._entries.values()), n))
        entries.reverse()
        return entries

    def focus_vector(self, n: int) -> Vector | None:
        """The mean direction of the newest n items that are embedded: what the conversation
        is about now. None when none of them is: older vectors would speak for an older topic
        (appends can outrun the indexer)."""
        newest = islice(reversed(self._entries.values()), n)
        vectors = [e.vector for e in newest if e.vector is not None]
        if not vectors:
            return None
        mean = np.mean(np.array(vectors), axis=0)
        norm = float(np.linalg.norm(mean))
        return (mean / norm).astype(np.float32) if norm > 0 else None

    def scores(
        self, settings: ConversationSettings, clock: Clock, focus: Vector | None
    ) -> WindowScores:
        """Relevance of every entry. An item whose vector has not arrived yet gets the mean
        similarity of the others, so waiting for the embedder neither shields nor dooms it."""
        # Every append that evicts scores the whole window: one list per attribute, built by
        # comprehensions (generators into np.fromiter cost about twice as much), and vectors
        # joined by np.array (the same matrix as np.stack's in under half the time).
        entries = list(self._entries.values())
        items = [e.item for e in entries]
        n = len(items)
        sims = np.zeros(n, dtype=np.float64)
        if focus is not None and n:
            vectors = [e.vector for e in entries]
            have = [i for i, v in enumerate(vectors) if v is not None]
            if len(have) == n:  # the usual case once the indexer has caught up
                sims[:] = np.array(vectors) @ focus
            elif have:
                sims[have] = np.array([vectors[i] for i in have]) @ focus
                missing = [i for i, v in enumerate(vectors) if v is None]
                sims[missing] = float(np.mean(sims[have]))
        seqs = np.array([it.seq for it in items], dtype=np.float64)
        score, recency, importance, role = relevance_many(
            settings,
            clock,
            timestamps=np.array([it.timestamp for it in items], dtype=np.float64),
            seqs=seqs,
            roles=[it.role for it in items],
            flags=[it.flags for it in items],
            similarities=sims,
        )
        return WindowScores(seqs.astype(np.int64), score, recency, importance, sims, role)


@dataclass(frozen=True, slots=True)
class WindowScores:
    """Relevance of each window item, as arrays in window order."""

    seqs: npt.NDArray[np.int64]
    score: npt.NDArray[np.float64]
    recency: npt.NDArray[np.float64]
    importance: npt.NDArray[np.float64]
    similarity: npt.NDArray[np.float64]
    role: npt.NDArray[np.float64]

    def at(self, i: int) -> tuple[float, ScoreParts]:
        """The score and parts of the i-th item."""
        return float(self.score[i]), ScoreParts(
            recency=float(self.recency[i]),
            importance=float(self.importance[i]),
            similarity=float(self.similarity[i]),
            role=float(self.role[i]),
        )


def protected_tail(
    window: Window, settings: ConversationSettings, token_limit: int, item_limit: int
) -> int:
    """How many of the window's newest items no eviction may take: the newest item always,
    then older ones while they number at most protected_tail_items and take at most
    protected_tail_share of both limits (items and tokens) together.

    A sliding window that drops what was just said cannot be trusted, whatever older items
    score: flags and similarity decide among the items behind the tail.
    """
    share = settings.protected_tail_share
    most = max(1, min(settings.protected_tail_items, math.floor(share * item_limit)))
    allowance = share * token_limit
    count, tokens = 0, 0
    for entry in reversed(window.newest(most)):
        tokens += entry.item.token_count
        if count >= most or (count and tokens > allowance):
            break
        count += 1
    return count


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

    The protected tail (see protected_tail) is never chosen, unless an item of it is larger
    than the whole token limit: such an item can never fit, and it goes first (keeping it
    would push everything else out). Then the lowest relevance score, oldest first on ties;
    pinned items only when nothing else is left, oldest first. The tail fits both limits by
    construction, so what is left always suffices.
    """
    tokens, count = window.tokens, len(window)
    if tokens <= token_limit and count <= item_limit:
        return []
    items = [e.item for e in window]
    scored = window.scores(settings, clock, focus)
    token_counts = np.array([it.token_count for it in items], dtype=np.int64)
    pinned = np.array([int(it.flags) & _PINNED for it in items], dtype=bool)
    fits = token_counts <= token_limit
    tail = protected_tail(window, settings, token_limit, item_limit)
    open_ = np.ones(len(items), dtype=bool)
    open_[len(items) - tail :] = False
    # Pinned items rank by age alone. Scores are compared at 1e-9 so that sums which only
    # differ in rounding count as ties, and ties go to the older item.
    rounded = np.where(pinned, 0.0, np.round(scored.score, 9))
    # lexsort's last key is the primary one: oversized first, then unpinned, score, seq.
    order = np.lexsort((scored.seqs, rounded, pinned, fits))
    evictions: list[Eviction] = []
    for i in order.tolist():
        if tokens <= token_limit and count <= item_limit:
            break
        if fits[i] and not open_[i]:
            continue
        score, parts = scored.at(i)
        evictions.append(Eviction(int(scored.seqs[i]), score, parts))
        tokens -= int(token_counts[i])
        count -= 1
    return evictions
