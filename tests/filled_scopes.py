"""A store filled for the statistics tests: conversations in two namespaces with items in
every state, some with vectors (some of another model), one without items; and the
reference their figures are checked against, counted from the listed items."""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
from contextwm.domain.items import Flag, Item, ItemState
from contextwm.domain.stats import StateStats, StoreStats
from stores import MODEL, T0, RoleStore, new_conversation, set_states

CONVERSATIONS = [("team-a", "a1"), ("team-a", "a2"), ("team-b", "b1"), ("team-b", "b2")]


def item(seq: int, tokens: int, ts: float) -> Item:
    return Item(
        conversation_id="",
        seq=seq,
        role="user",
        content=f"item number {seq}",
        timestamp=ts,
        token_count=tokens,
        flags=Flag.NONE,
        metadata=MappingProxyType({}),
        file=None,
        state=ItemState.WINDOW,
    )


def fill(store: RoleStore) -> dict[tuple[str, str], int]:
    """The conversations of CONVERSATIONS, b2 without items; returns their keys."""
    keys: dict[tuple[str, str], int] = {}
    for n, (ns, cid) in enumerate(CONVERSATIONS):
        key = new_conversation(store, cid, ns)
        keys[ns, cid] = key
        count = 0 if cid == "b2" else 6 + 3 * n
        items = [item(s, tokens=10 * s + n, ts=T0 + 100 * n + s) for s in range(1, count + 1)]
        store.commit_append(key, items, [None] * count, [], 1000, "general")
        if count:
            store.commit_append(key, [], [], [1, 2, 3, 4], 1000, "general")
            embedded = [(key, s) for s in range(1, count + 1) if s % 3]
            store.put_vectors(MODEL, embedded, np.ones((len(embedded), 4), dtype=np.float32))
            store.put_vectors("other-model", [(key, 3)], np.ones((1, 4), dtype=np.float32))
            # Compaction and restore move items through states the appends do not.
            set_states(store, key, [2], ItemState.COMPACTED)
            set_states(store, key, range(6, count + 1), ItemState.REVERTED)
    return keys


def counted(store: RoleStore, keys: list[int]) -> StoreStats:
    """The reference: the figures of these conversations from their listed items."""
    by_state = {state: StateStats() for state in ItemState}
    vectors = 0
    times: list[float] = []
    for key in keys:
        items = store.list_items(key, 0, 1000, [])
        for i in items:
            s = by_state[i.state]
            by_state[i.state] = StateStats(s.items + 1, s.tokens + i.token_count)
            times.append(i.timestamp)
        vectors += len(store.vectors_for(key, [i.seq for i in items], MODEL))
    return StoreStats(
        window=by_state[ItemState.WINDOW],
        archived=by_state[ItemState.ARCHIVED],
        compacted=by_state[ItemState.COMPACTED],
        reverted=by_state[ItemState.REVERTED],
        vectors=vectors,
        oldest=min(times, default=None),
        newest=max(times, default=None),
    )
