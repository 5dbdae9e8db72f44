"""The store's side of re-embedding: which model a conversation's vectors come from, the
indexer's pending items leaving stale conversations out, the walk over a conversation's
unembedded items, the switch to the new model, and the migration of older files."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from contextwm.adapters.sqlite import SqliteStore
from contextwm.adapters.sqlite.schema import SCHEMA_VERSION
from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.items import Flag, Item, ItemState
from contextwm.ports.reembed_store import StaleConversation

OLD, NEW = "old-model", "new-model"
T0 = 1_700_000_000.0


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def store(path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(path)
    yield s
    s.close()


def conversation(store: SqliteStore, cid: str, items: int, ns: str = "default") -> int:
    key = store.create_conversation(ns, cid, ConversationSettings(), T0).key
    new = [
        Item(
            cid,
            seq,
            "user",
            f"{cid} item {seq}",
            T0 + seq,
            3,
            Flag.NONE,
            {},
            None,
            ItemState.WINDOW,
        )
        for seq in range(1, items + 1)
    ]
    store.commit_append(key, new, [None] * items, [], 1000, "general")
    return key


def embed(store: SqliteStore, model: str, key: int, seqs: range) -> None:
    vectors = np.full((len(seqs), 4), 0.5, dtype=np.float32)
    store.put_vectors(model, [(key, s) for s in seqs], vectors)


def model_of(store: SqliteStore, key: int) -> str | None:
    record = store.conversation_record(key)
    assert record is not None
    return record.embed_model


def test_the_first_vectors_name_the_model_and_another_models_do_not_change_it(
    store: SqliteStore,
) -> None:
    key = conversation(store, "a", 4)
    assert model_of(store, key) is None  # no vectors yet: it takes whatever model comes
    embed(store, OLD, key, range(1, 3))
    assert model_of(store, key) == OLD
    embed(store, NEW, key, range(1, 5))  # a re-embed under way
    assert model_of(store, key) == OLD


def test_the_indexer_is_offered_no_item_of_a_conversation_of_another_model(
    store: SqliteStore,
) -> None:
    stale = conversation(store, "stale", 3)
    embed(store, OLD, stale, range(1, 3))  # item 3 waits too, for the re-embed
    empty = conversation(store, "empty", 2)  # no vectors: takes the current model
    current = conversation(store, "current", 2)
    embed(store, NEW, current, range(1, 2))
    pending = store.pending_vectors(NEW, 100)
    assert [(p.conversation_key, p.seq) for p in pending] == [(empty, 1), (empty, 2), (current, 2)]
    assert store.pending_vectors_of(NEW, stale, 100) == []
    assert [p.seq for p in store.pending_vectors_of(NEW, empty, 100)] == [2, 1]
    # To the old model's server the same conversation is current.
    assert [p.seq for p in store.pending_vectors_of(OLD, stale, 100)] == [3]


def test_unembedded_items_walk_a_conversation_in_seq_order(store: SqliteStore) -> None:
    key = conversation(store, "a", 10)
    other = conversation(store, "b", 3)
    embed(store, OLD, key, range(1, 11))
    embed(store, NEW, key, range(3, 5))  # an earlier run's batch
    first = store.unembedded_items(key, NEW, 0, 4)
    assert [p.seq for p in first] == [1, 2, 5, 6]
    assert first[0].text == "a item 1" and first[0].conversation_key == key
    assert [p.seq for p in store.unembedded_items(key, NEW, 6, 100)] == [7, 8, 9, 10]
    assert store.unembedded_items(key, NEW, 10, 100) == []
    assert [p.seq for p in store.unembedded_items(other, NEW, 0, 100)] == [1, 2, 3]


def test_finishing_drops_the_other_models_vectors_and_names_the_new_one(
    store: SqliteStore,
) -> None:
    key = conversation(store, "a", 4)
    other = conversation(store, "b", 2)
    embed(store, OLD, key, range(1, 5))
    embed(store, OLD, other, range(1, 3))
    embed(store, NEW, key, range(1, 4))  # item 4 keeps its old vector: dropped
    assert store.finish_reembed(key, NEW) == 1
    assert model_of(store, key) == NEW
    assert store.counts(key, NEW).pending_vectors == 1
    assert store.vectors_for(key, [1, 2, 3, 4], OLD) == {}
    # Another conversation is left as it was.
    assert model_of(store, other) == OLD
    assert len(store.vectors_for(other, [1, 2], OLD)) == 2


def test_stale_conversations_by_namespace(store: SqliteStore) -> None:
    keys = {}
    for ns, cid, model in (
        ("x", "b", OLD),
        ("x", "a", "older-model"),
        ("x", "current", NEW),
        ("y", "c", OLD),
    ):
        keys[cid] = conversation(store, cid, 1, ns)
        embed(store, model, keys[cid], range(1, 2))
    conversation(store, "empty", 1, "x")
    assert store.stale_conversations(NEW, "x") == [
        StaleConversation(keys["a"], "x", "a", "older-model"),
        StaleConversation(keys["b"], "x", "b", OLD),
    ]
    assert [s.conversation_id for s in store.stale_conversations(NEW, None)] == ["a", "b", "c"]
    assert store.stale_conversations(NEW, "z") == []


def test_a_version_3_file_learns_each_conversations_model_from_its_vectors(path: Path) -> None:
    store = SqliteStore(path)
    mixed = conversation(store, "mixed", 3)
    embed(store, NEW, mixed, range(1, 2))  # an older server re-embedding silently
    embed(store, OLD, mixed, range(2, 4))
    old = conversation(store, "old", 2)
    embed(store, OLD, old, range(2, 3))  # its first item waits for a vector
    empty = conversation(store, "empty", 2)
    store.close()
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE conversations DROP COLUMN embed_model")
    db.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    store = SqliteStore(path)
    try:
        # That of its oldest embedded item.
        assert (model_of(store, mixed), model_of(store, old), model_of(store, empty)) == (
            NEW,
            OLD,
            None,
        )
    finally:
        store.close()
    version = sqlite3.connect(path).execute("SELECT value FROM meta").fetchone()[0]
    assert version == str(SCHEMA_VERSION) == "4"
