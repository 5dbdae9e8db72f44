"""The store's side of re-embedding, the same tests on SQLite and PostgreSQL: which model a
conversation's vectors come from, the indexer's pending items leaving stale conversations out,
the walk over a conversation's unembedded items, and the switch to the new model."""

from __future__ import annotations

import numpy as np
from contextwm.domain.conversations import ConversationSettings
from contextwm.ports.reembed_store import StaleConversation
from stores import T0, RoleStore, add, make_item

OLD, NEW = "old-model", "new-model"


def conversation(store: RoleStore, cid: str, items: int, ns: str = "default") -> int:
    key = store.create_conversation(ns, cid, ConversationSettings(), T0).key
    add(
        store,
        key,
        [make_item(s, f"{cid} item {s}", conversation_id=cid) for s in range(1, items + 1)],
    )
    return key


def embed(store: RoleStore, model: str, key: int, seqs: range) -> None:
    vectors = np.full((len(seqs), 4), 0.5, dtype=np.float32)
    store.put_vectors(model, [(key, s) for s in seqs], vectors)


def model_of(store: RoleStore, key: int) -> str | None:
    record = store.conversation_record(key)
    assert record is not None
    return record.embed_model


def test_the_first_vectors_name_the_model_and_another_models_do_not_change_it(
    store: RoleStore,
) -> None:
    key = conversation(store, "a", 4)
    assert model_of(store, key) is None  # no vectors yet: it takes whatever model comes
    embed(store, OLD, key, range(1, 3))
    assert model_of(store, key) == OLD
    embed(store, NEW, key, range(1, 5))  # a re-embed under way
    assert model_of(store, key) == OLD


def test_the_indexer_is_offered_no_item_of_a_conversation_of_another_model(
    store: RoleStore,
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


def test_unembedded_items_walk_a_conversation_in_seq_order(store: RoleStore) -> None:
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


def test_unembedded_items_give_back_the_text_as_it_came(store: RoleStore) -> None:
    key = conversation(store, "a", 0)
    odd = "nul \x00 and \x01 kept"
    add(store, key, [make_item(1, odd, conversation_id="a")])
    assert [p.text for p in store.unembedded_items(key, NEW, 0, 10)] == [odd]


def test_finishing_drops_the_other_models_vectors_and_names_the_new_one(
    store: RoleStore,
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
    assert sorted(store.vectors_for(key, [1, 2, 3, 4], NEW)) == [1, 2, 3]
    # Now current: its last item is the indexer's again, and nothing is stale.
    assert [p.seq for p in store.pending_vectors_of(NEW, key, 100)] == [4]
    assert store.finish_reembed(key, NEW) == 0
    # Another conversation is left as it was.
    assert model_of(store, other) == OLD
    assert len(store.vectors_for(other, [1, 2], OLD)) == 2


def test_stale_conversations_by_namespace(store: RoleStore) -> None:
    keys = {}
    for ns, cid, model in (
        ("x", "b", OLD),
        ("x", "a", "older-model"),
        ("x", "current", NEW),
        ("y", "c", OLD),
        ("X", "é", OLD),
        ("x", "B", OLD),
    ):
        keys[cid] = conversation(store, cid, 1, ns)
        embed(store, model, keys[cid], range(1, 2))
    conversation(store, "empty", 1, "x")  # no vectors: not stale, it takes the model
    assert store.stale_conversations(NEW, "x") == [
        StaleConversation(keys["B"], "x", "B", OLD),
        StaleConversation(keys["a"], "x", "a", "older-model"),
        StaleConversation(keys["b"], "x", "b", OLD),
    ]
    # By namespace, then id, in byte order.
    assert [s.conversation_id for s in store.stale_conversations(NEW, None)] == [
        "é",
        "B",
        "a",
        "b",
        "c",
    ]
    assert store.stale_conversations(NEW, "z") == []
    assert [s.conversation_id for s in store.stale_conversations(OLD, "x")] == ["a", "current"]
