"""The retention role of the store, the same tests on SQLite and PostgreSQL: conversations with
when they were last appended to, the archived rows the policies judge, and items removed with
everything derived from them."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import psycopg
import pytest
from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.facts import Fact, FactKind
from contextwm.domain.history import CompactionRecord, ContextEdit, EditKind
from contextwm.domain.items import Flag
from contextwm.ports.retention_store import ArchivedRow, RemovedRows
from stores import (
    MODEL,
    T0,
    RoleStore,
    add,
    listed,
    make_item,
    new_conversation,
    search,
    unit_vectors,
)


def removed_items(request: pytest.FixtureRequest, tmp_path: Path, key: int) -> int:
    """The conversation's count of removed items, read from its row: no role both stores
    serve reads it back yet (the SQLite store's namespace totals do)."""
    sql = "SELECT removed_items FROM conversations WHERE id = "
    if request.node.callspec.params["store"] == "sqlite":
        with sqlite3.connect(tmp_path / "store.db") as lite:
            return int(lite.execute(sql + "?", (key,)).fetchone()[0])
    with psycopg.connect(request.getfixturevalue("pg_dsn")) as pg:
        row = pg.execute(sql + "%s", (key,)).fetchone()
    assert row is not None
    return int(row[0])


def test_remove_items_takes_archived_items_with_their_words_vectors_and_facts(
    store: RoleStore, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    key = new_conversation(store)
    other = new_conversation(store, "other")
    items = [make_item(s, f"walrus {s}") for s in range(1, 6)]
    facts = [Fact(FactKind.COMMAND, "make deploy", 2), Fact(FactKind.COMMAND, "make test", 5)]
    store.commit_append(key, items, [None] * 5, [], 1000, "general", facts=facts)
    add(store, key, [], evicted=[1, 2, 3])
    # Another conversation with the same seqs, words and states: nothing of it goes.
    store.commit_append(
        other,
        [make_item(s, f"walrus {s}", conversation_id="other") for s in range(1, 4)],
        [None] * 3,
        [1, 2],
        1000,
        "general",
        facts=[Fact(FactKind.COMMAND, "make other", 2)],
    )
    store.put_vectors(
        MODEL, [(key, s) for s in range(1, 6)] + [(other, s) for s in range(1, 4)], unit_vectors(8)
    )
    assert store.archived_rows(key, MODEL, [3, 2, 9]) == [
        ArchivedRow(2, T0 + 2, False, True),
        ArchivedRow(3, T0 + 3, False, True),
    ]
    # Seq 4 is in the window: it stays whatever the caller asks.
    assert store.remove_items(key, [2, 3, 4]) == RemovedRows(count=2, tokens=6)
    assert [i.seq for i in store.list_items(key, 0, 10, ())] == [1, 4, 5]
    assert sorted(store.vectors_for(key, range(1, 6), MODEL)) == [1, 4, 5]
    assert store.counts(key, MODEL).pending_vectors == 0
    # The word's rows went with the items: its count is of the items left.
    walrus = store.term_postings(key, ["walrus"], 10)["walrus"]
    assert (walrus.count, len(walrus.rows)) == (3, 3)
    assert sorted(search(store, key, "walrus")) == [1, 4, 5]
    assert listed(store, key, "walrus") == [1, 4, 5]
    assert [f.seq for f in store.facts(key)] == [5]
    assert removed_items(request, tmp_path, key) == 2
    assert [r.seq for r in store.archived_rows(key, MODEL)] == [1]
    counts = store.counts(key, MODEL)
    assert (counts.total, counts.archived, counts.tokens) == (3, 1, 9)
    # Facts are keyed by seq: had one outlived its item, an item later stored at that seq
    # would show it.
    add(store, key, [make_item(2, "a later item at a freed seq")])
    assert [f.seq for f in store.facts(key)] == [5]
    # Nothing removable: nothing removed, nothing counted.
    assert store.remove_items(key, [4, 5, 99]) == RemovedRows(0, 0)
    assert store.remove_items(key, []) == RemovedRows(0, 0)
    assert removed_items(request, tmp_path, key) == 2
    # The other conversation is as it was.
    assert [i.seq for i in store.list_items(other, 0, 10, ())] == [1, 2, 3]
    assert sorted(store.vectors_for(other, range(1, 4), MODEL)) == [1, 2, 3]
    assert listed(store, other, "walrus") == [1, 2, 3]
    assert [f.text for f in store.facts(other)] == ["make other"]
    assert [r.seq for r in store.archived_rows(other, MODEL)] == [1, 2]
    assert removed_items(request, tmp_path, other) == 0


def test_archived_rows_are_the_archived_and_compacted_items_with_pins_and_vectors(
    store: RoleStore,
) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(s, flags=Flag.PINNED if s == 2 else Flag.NONE) for s in range(1, 7)])
    add(store, key, [], evicted=[1, 2])
    store.put_vectors(MODEL, [(key, 1), (key, 3)], unit_vectors(2))
    store.put_vectors("other-model", [(key, 2)], unit_vectors(1))  # not the model asked for
    # A compaction puts archived 1 and 2 and the window's 3 to 6 behind its marker (7):
    # compacted items are judged too.
    marker = dataclasses.replace(make_item(7, "the summary"), kind="compaction")
    record = CompactionRecord(
        number=1,
        at=T0 + 100,
        summary="summary",
        extractive=True,
        marker_seq=7,
        items_archived=6,
        tokens_before=21,
        tokens_after=3,
        ledger="",
        facts=(),
    )
    cut = ContextEdit(1, T0 + 100, EditKind.COMPACTION, (1, 2, 3, 4, 5, 6), 7, 30)
    store.commit_compaction(key, marker, record, cut, [], [])
    everything = [
        ArchivedRow(1, T0 + 1, False, True),
        ArchivedRow(2, T0 + 2, True, False),
        ArchivedRow(3, T0 + 3, False, True),
        ArchivedRow(4, T0 + 4, False, False),
        ArchivedRow(5, T0 + 5, False, False),
        ArchivedRow(6, T0 + 6, False, False),
    ]
    assert store.archived_rows(key, MODEL) == everything
    # Among seqs given in any order, the marker in the window left out.
    assert store.archived_rows(key, MODEL, (7, 3, 1, 12)) == [
        everything[0],
        everything[2],
    ]
    assert store.archived_rows(key, MODEL, []) == []
    assert store.archived_rows(key + 1, MODEL) == []
    # Compacted items are removable; the pin is the policies' to judge, not the store's.
    assert store.remove_items(key, (7, 5, 2)) == RemovedRows(2, 6)
    assert [r.seq for r in store.archived_rows(key, MODEL)] == [1, 3, 4, 6]


def test_conversation_activity_lists_by_namespace_then_id_in_byte_order(store: RoleStore) -> None:
    names = [("b", "x"), ("a", "é"), ("a", "Z"), ("B", "a"), ("a", "_1"), ("b", "B")]
    keys = {name: new_conversation(store, name[1], ns=name[0]) for name in names}
    listed_all = store.conversation_activity(None)
    assert [(a.record.namespace, a.record.conversation_id) for a in listed_all] == sorted(
        names, key=lambda n: (n[0].encode(), n[1].encode())
    )
    for activity in listed_all:
        name = (activity.record.namespace, activity.record.conversation_id)
        assert activity.record == store.conversation_record(keys[name])
    assert [a.record.conversation_id for a in store.conversation_activity("a")] == ["Z", "_1", "é"]
    assert [a.record.conversation_id for a in store.conversation_activity("b")] == ["B", "x"]
    assert store.conversation_activity("A") == []


def test_last_active_is_the_last_append_else_the_newest_of_creation_and_items(
    store: RoleStore,
) -> None:
    created = T0 + 100
    key = store.create_conversation("ns", "c", ConversationSettings(), created).key
    other = store.create_conversation("ns", "d", ConversationSettings(), T0).key

    def both() -> tuple[float | None, list[float]]:
        activity = {a.record.key: a.last_active for a in store.conversation_activity("ns")}
        return store.last_active(key), [activity[key], activity[other]]

    assert both() == (created, [created, T0])
    # Appends that record no time: the newest of creation and the items stands in, whatever
    # order the items' own timestamps come in.
    add(store, key, [make_item(1, ts=T0 + 50)])
    assert both() == (created, [created, T0])
    add(store, key, [make_item(2, ts=T0 + 500), make_item(3, ts=T0 + 20)])
    assert both() == (T0 + 500, [T0 + 500, T0])
    # A recorded append time wins, even one older than the items.
    store.commit_append(key, [make_item(4)], [None], [], 1000, "general", appended_at=T0 + 9)
    assert both() == (T0 + 9, [T0 + 9, T0])
    # An append without a time (an eviction) keeps the one recorded.
    store.commit_append(key, [], [], [1], 1000, "general")
    assert both() == (T0 + 9, [T0 + 9, T0])
    assert store.last_active(key + other + 1) is None
