"""Rows of the statistics' aggregate queries as domain values, in the column order both stores
read them in."""

from __future__ import annotations

from collections.abc import Iterable

from contextwm.domain.items import ItemState
from contextwm.domain.stats import StateStats, StoreStats

StatsRow = tuple[int, int, int, float | None, float | None, int]
"""state, items, tokens, oldest, newest, vectors"""

_STATES = {int(state): state for state in ItemState}


def store_stats(rows: Iterable[StatsRow]) -> StoreStats:
    """Sums the rows of one group by state."""
    by_state: dict[ItemState, StateStats] = {}
    vectors = 0
    oldest: float | None = None
    newest: float | None = None
    for value, items, tokens, low, high, embedded in rows:
        state = _STATES.get(value)
        if state is None:  # a damaged row: `contextwm check` reports it
            continue
        by_state[state] = StateStats(items, tokens)
        vectors += embedded
        if low is not None:
            oldest = low if oldest is None else min(oldest, low)
        if high is not None:
            newest = high if newest is None else max(newest, high)
    none = StateStats()
    return StoreStats(
        window=by_state.get(ItemState.WINDOW, none),
        archived=by_state.get(ItemState.ARCHIVED, none),
        compacted=by_state.get(ItemState.COMPACTED, none),
        reverted=by_state.get(ItemState.REVERTED, none),
        vectors=vectors,
        oldest=oldest,
        newest=newest,
    )
