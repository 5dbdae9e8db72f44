"""The memo of archived items and full-text rows: what it keeps, what a write makes it
forget, and that a read overlapping a write keeps nothing; then the SQLite store's reads
after each write that changes archived items."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from contextwm.adapters.item_memo import ITEM_COST, ItemMemo
from contextwm.adapters.sqlite import SqliteStore
from contextwm.domain.items import Flag, Item, ItemState
from stores import MODEL, A, add, make_item, new_conversation, unit_vectors

C = ItemState.COMPACTED


def archived(seq: int, content: str = "", state: ItemState = A) -> Item:
    return dataclasses.replace(make_item(seq, content), state=state)


def test_keeps_archived_and_compacted_items_and_rows_only() -> None:
    memo = ItemMemo()
    items = [archived(1), archived(2, state=C), make_item(3)]  # 3 is a window item
    memo.keep(
        7, memo.generation, items, {10: (1, 3, A), 11: (2, 3, C), 12: (3, 3, ItemState.WINDOW)}
    )
    found, missing = memo.items(7, [1, 2, 3, 4])
    assert sorted(found) == [1, 2] and missing == [3, 4]
    rows, missing_rows = memo.rows(7, [10, 11, 12])
    assert rows == {10: (1, 3, A), 11: (2, 3, C)} and missing_rows == [12]
    assert memo.items(8, [1]) == ({}, [1])  # another conversation


def test_keeps_vectors_of_any_item_by_model() -> None:
    memo = ItemMemo()
    vector = np.ones(4, dtype=np.float32)
    memo.keep(7, memo.generation, vectors=("m1", {3: vector}))
    assert memo.vectors(7, "m1", [3, 4]) == ({3: vector}, [4])
    assert memo.vectors(7, "m2", [3]) == ({}, [3])
    memo.forget(7)
    assert memo.vectors(7, "m1", [3]) == ({}, [3])


def test_forget_drops_the_conversation_and_refuses_reads_that_began_before() -> None:
    memo = ItemMemo()
    memo.keep(7, memo.generation, [archived(1)])
    memo.keep(8, memo.generation, [archived(1)])
    began = memo.generation
    memo.forget(7)
    assert memo.items(7, [1]) == ({}, [1])
    assert sorted(memo.items(8, [1])[0]) == [1]  # other conversations stay
    memo.keep(7, began, [archived(1)])  # read from a snapshot that may predate the write
    assert memo.items(7, [1]) == ({}, [1])
    memo.keep(7, memo.generation, [archived(1)])
    assert sorted(memo.items(7, [1])[0]) == [1]


def test_the_least_recently_read_conversation_goes_first_past_the_bound() -> None:
    size = len("x" * 1000) + ITEM_COST
    memo = ItemMemo(max_chars=2 * size)
    for key in (1, 2):
        memo.keep(key, memo.generation, [archived(1, "x" * 1000)])
    memo.items(1, [1])  # read last: kept
    memo.keep(3, memo.generation, [archived(1, "x" * 1000)])
    assert [bool(memo.items(k, [1])[0]) for k in (1, 2, 3)] == [True, False, True]


# ---------------------------------------------------------------- the SQLite store's reads


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(tmp_path / "store.db")
    yield s
    s.close()


@pytest.fixture
def key(store: SqliteStore) -> int:
    """A conversation of five items about walruses, 1-4 archived and read once (remembered)."""
    k = new_conversation(store)
    add(store, k, [make_item(s, f"walrus {s}") for s in range(1, 6)])
    add(store, k, [], evicted=[1, 2, 3, 4])
    read(store, k)
    return k


def read(store: SqliteStore, key: int) -> tuple[dict[int, Item], dict[int, tuple[int, int]]]:
    """get_items of every seq and the row_items of 'walrus' in any live state."""
    rows = store.term_postings(key, ["walrus"], 100)["walrus"].rows
    states = (ItemState.WINDOW, A, C)
    return store.get_items(key, [1, 2, 3, 4, 5]), store.row_items(key, rows, states)


def test_reads_come_back_the_same_from_memory(store: SqliteStore, key: int) -> None:
    items, rows = read(store, key)
    assert sorted(items) == [1, 2, 3, 4, 5] and sorted(s for s, _ in rows.values()) == [
        1,
        2,
        3,
        4,
        5,
    ]
    assert read(store, key) == (items, rows)
    assert items[2].state == A and items[5].state == ItemState.WINDOW


def test_flags_set_on_an_archived_item_are_read(store: SqliteStore, key: int) -> None:
    store.set_flags(key, 2, Flag.PINNED)
    assert read(store, key)[0][2].flags == Flag.PINNED


def test_items_removed_by_retention_are_gone(store: SqliteStore, key: int) -> None:
    store.remove_items(key, [1, 2])
    items, rows = read(store, key)
    assert sorted(items) == [3, 4, 5] and sorted(s for s, _ in rows.values()) == [3, 4, 5]


def test_a_deleted_conversation_leaves_nothing_for_a_key_used_again(
    store: SqliteStore, key: int
) -> None:
    store.delete_conversation(key)
    assert store.get_items(key, [1, 2]) == {}
    again = new_conversation(store, "c2")
    add(store, again, [make_item(1, "walrus again", conversation_id="c2")], evicted=[1])
    assert [i.content for i in store.get_items(again, [1]).values()] == ["walrus again"]


def test_state_changes_by_compaction_and_restore_are_read(store: SqliteStore, key: int) -> None:
    from stores import set_states  # writes as compaction and restore do

    set_states(store, key, [1, 2], C)
    assert [read(store, key)[0][s].state for s in (1, 2, 3)] == [C, C, A]
    set_states(store, key, [3], ItemState.REVERTED)
    items, rows = read(store, key)
    assert items[3].state == ItemState.REVERTED
    assert 3 not in {s for s, _ in rows.values()}  # not a live state


def test_a_vector_written_over_another_models_is_read(store: SqliteStore, key: int) -> None:
    old, new = unit_vectors(1), unit_vectors(1, seed=1)
    store.put_vectors(MODEL, [(key, 1)], old)
    assert np.array_equal(store.vectors_for(key, [1, 2], MODEL)[1], old[0])  # remembered
    store.put_vectors("new-model", [(key, 1)], new)  # a re-embed: the old one is gone
    assert np.array_equal(store.vectors_for(key, [1], "new-model")[1], new[0])
    store.finish_reembed(key, "new-model")
    assert store.vectors_for(key, [1], MODEL) == {}
