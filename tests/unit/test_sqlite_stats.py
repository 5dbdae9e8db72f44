"""The store's statistics (contextwm.adapters.sqlite.stats) against a count of the listed items,
their paging and snapshot, and the plans of their queries."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest
from contextwm.adapters.sqlite import SqliteStore
from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.items import Flag, Item, ItemState
from contextwm.domain.scope import Scope
from contextwm.domain.stats import StateStats, StoreStats

MODEL = "test-model"
T0 = 1_700_000_000.0
EVERY = Scope(None)
START = ("", "")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def store(path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(path)
    yield s
    s.close()


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


def fill(store: SqliteStore, path: Path) -> dict[tuple[str, str], int]:
    """Conversations in two namespaces with items in every state, some with vectors (some
    of another model), and one conversation without items; returns their keys."""
    keys: dict[tuple[str, str], int] = {}
    for n, (ns, cid) in enumerate(
        [("team-a", "a1"), ("team-a", "a2"), ("team-b", "b1"), ("team-b", "b2")]
    ):
        key = store.create_conversation(ns, cid, ConversationSettings(), T0).key
        keys[ns, cid] = key
        count = 0 if cid == "b2" else 6 + 3 * n
        items = [item(s, tokens=10 * s + n, ts=T0 + 100 * n + s) for s in range(1, count + 1)]
        store.commit_append(key, items, [None] * count, [], 1000, "general")
        if count:
            store.commit_append(key, [], [], [1, 2, 3, 4], 1000, "general")
            embedded = [(key, s) for s in range(1, count + 1) if s % 3]
            store.put_vectors(MODEL, embedded, np.ones((len(embedded), 4), dtype=np.float32))
            store.put_vectors("other-model", [(key, 3)], np.ones((1, 4), dtype=np.float32))
    # Compaction and restore move items through states the appends do not: set them here.
    db = sqlite3.connect(path)
    with db:
        for key in keys.values():
            db.execute(
                "UPDATE items SET state = ? WHERE conv = ? AND seq = 2",
                (int(ItemState.COMPACTED), key),
            )
            db.execute(
                "UPDATE items SET state = ? WHERE conv = ? AND seq >= 6",
                (int(ItemState.REVERTED), key),
            )
    db.close()
    return keys


def counted(store: SqliteStore, keys: list[int]) -> StoreStats:
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


def test_figures_match_the_listed_items_per_conversation_and_scope(
    store: SqliteStore, path: Path
) -> None:
    keys = fill(store, path)
    found = store.stats(EVERY, MODEL, START, 100)
    assert [(c.namespace, c.conversation_id) for c in found.conversations] == list(keys)
    for row in found.conversations:
        assert row.key == keys[row.namespace, row.conversation_id]
        assert row.stats == counted(store, [row.key])
    assert found.total == counted(store, list(keys.values()))
    assert sorted(found.keys) == sorted(keys.values())
    # Every state is there, and the items lacking a vector of this model are counted.
    total = found.total
    assert all(s.items for s in total.states)
    assert total.items == sum(6 + 3 * n for n in range(3))
    assert total.missing_vectors == total.items - total.vectors > 0

    team_b = store.stats(Scope("team-b"), MODEL, START, 100)
    assert [c.conversation_id for c in team_b.conversations] == ["b1", "b2"]
    assert team_b.total == counted(store, [keys["team-b", "b1"], keys["team-b", "b2"]])
    assert team_b.conversations[1].stats == StoreStats()  # no items: no times either
    one = store.stats(Scope("team-a", "a2"), MODEL, START, 100)
    assert [c.conversation_id for c in one.conversations] == ["a2"]
    assert one.total == one.conversations[0].stats == counted(store, [keys["team-a", "a2"]])
    assert one.keys == (keys["team-a", "a2"],)
    assert store.stats(Scope("team-a", "nope"), MODEL, START, 100).conversations == ()
    nobody = store.stats(Scope("nobody"), MODEL, START, 100)
    assert (nobody.conversations, nobody.total, nobody.keys) == ((), StoreStats(), ())


def test_pages_resume_after_a_conversation_and_totals_cover_the_scope(
    store: SqliteStore, path: Path
) -> None:
    keys = fill(store, path)
    whole = store.stats(EVERY, MODEL, START, 100).total
    first = store.stats(EVERY, MODEL, START, 3)
    assert [c.conversation_id for c in first.conversations] == ["a1", "a2", "b1"]
    rest = store.stats(EVERY, MODEL, ("team-a", "a2"), 3)
    assert [c.conversation_id for c in rest.conversations] == ["b1", "b2"]
    assert first.total == rest.total == whole
    in_b = store.stats(Scope("team-b"), MODEL, ("team-b", "b1"), 3)
    assert [c.conversation_id for c in in_b.conversations] == ["b2"]
    assert len(in_b.keys) == 2
    assert {c.key for c in first.conversations + rest.conversations} == set(keys.values())


def test_every_query_reads_covering_indexes_only(store: SqliteStore, path: Path) -> None:
    # Items and vectors are read from indexes, never from their rows (content, blobs): what
    # keeps the statistics cheap on a large store.
    fill(store, path)
    db = store._reader()
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    try:
        for scope in (EVERY, Scope("team-a"), Scope("team-a", "a1")):
            store.stats(scope, MODEL, START, 2)
    finally:
        db.set_trace_callback(None)
    queries = [s for s in statements if s.startswith("SELECT")]
    assert len(queries) == 12
    for query in queries:
        for *_, detail in db.execute(f"EXPLAIN QUERY PLAN {query}").fetchall():
            words = detail.split()
            if words[0] in ("SCAN", "SEARCH") and words[1] in ("i", "v"):  # items, vectors
                assert "COVERING INDEX" in detail, (query, detail)


def test_a_file_without_the_indexes_gets_them_when_opened(path: Path) -> None:
    SqliteStore(path).close()
    db = sqlite3.connect(path)
    db.execute("DROP INDEX items_stats")
    db.execute("DROP INDEX vectors_model")
    db.commit()
    db.close()
    store = SqliteStore(path)
    try:
        assert store.stats(EVERY, MODEL, START, 10).total == StoreStats()
    finally:
        store.close()
    names = {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}
    assert {"items_stats", "vectors_model"} <= names


def test_the_page_and_the_totals_come_from_one_snapshot(store: SqliteStore, path: Path) -> None:
    keys = fill(store, path)
    db = store._reader()
    selects: list[str] = []

    def append_meanwhile(statement: str) -> None:
        # Just before the totals are read (the fourth query), another append commits.
        if statement.startswith("SELECT"):
            selects.append(statement)
            if len(selects) == 4:
                item_100 = item(100, 5, T0)
                store.commit_append(keys["team-a", "a1"], [item_100], [None], [], 1000, "general")

    db.set_trace_callback(append_meanwhile)
    try:
        found = store.stats(EVERY, MODEL, START, 100)
    finally:
        db.set_trace_callback(None)
    assert found.total.items == sum(c.stats.items for c in found.conversations)
    assert store.stats(EVERY, MODEL, START, 100).total.items == found.total.items + 1
