"""The namespace role of the store (NamespaceStore): reads over every conversation of a
namespace, the same tests on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from contextwm.adapters.postgres.store import PostgresStore
from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.items import Flag, ItemFilter, ItemState
from contextwm.ports.lexical_store import TermPostings
from contextwm.ports.namespace_store import ItemKey, PostingRow
from stores import (
    BOTH,
    MODEL,
    T0,
    A,
    RoleStore,
    W,
    add,
    make_item,
    new_conversation,
    set_states,
    unit_vectors,
)

EVERY_STATE = tuple(ItemState)


@dataclass(frozen=True)
class Keys:
    a: int  # namespace "default"
    b: int  # namespace "default"
    x: int  # namespace "other"


def populate(store: RoleStore) -> Keys:
    """Two conversations of "default" and one of "other", items 1 and 3 of a archived;
    tokens are 10 x seq + 1 in a, + 2 in b, + 3 in x, so a row tells its item."""
    keys = Keys(
        new_conversation(store, "a"),
        new_conversation(store, "b"),
        new_conversation(store, "x", ns="other"),
    )
    a = [
        ("user", "walrus on the ice", {}),
        ("assistant", "walrus and a bear", {"k": "v"}),
        ("user", "seal only", {}),
        ("assistant", "walrus-seal colony", {"k": "w"}),
        ("user", "nothing here", {}),
    ]
    add(
        store,
        keys.a,
        [
            make_item(s, text, role=role, metadata=meta, tokens=10 * s + 1, conversation_id="a")
            for s, (role, text, meta) in enumerate(a, 1)
        ],
    )
    add(store, keys.a, [], evicted=[1, 3])
    b = [("user", "walrus again"), ("user", "Walrus capital"), ("assistant", "seal\x00after")]
    add(
        store,
        keys.b,
        [
            make_item(s, text, role=role, tokens=10 * s + 2, conversation_id="b", flags=Flag.CODE)
            for s, (role, text) in enumerate(b, 1)
        ],
    )
    add(
        store,
        keys.x,
        [make_item(s, f"walrus {s}", tokens=10 * s + 3, conversation_id="x") for s in range(1, 5)],
    )
    return keys


def found(store: RoleStore, postings: TermPostings) -> list[ItemKey]:
    """The items of a term's rows, in row order."""
    rows = store.posting_rows(postings.rows, EVERY_STATE)
    return [(rows[r].key, rows[r].seq) for r in postings.rows]


# ---------------------------------------------------------------- postings


def test_postings_list_and_count_the_namespaces_items_holding_each_word(
    store: RoleStore,
) -> None:
    k = populate(store)
    words = ["walrus", "seal", "walrus-seal", "zebra", "!!!"]
    got = store.namespace_postings("default", words, 10)
    assert list(got) == words
    walrus = got["walrus"]
    assert walrus.count == 5
    assert list(walrus.rows) == sorted(walrus.rows)  # in row order: a's items come first
    assert found(store, walrus) == [(k.a, 1), (k.a, 2), (k.a, 4), (k.b, 1), (k.b, 2)]
    assert got["seal"].count == 3
    assert set(found(store, got["seal"])) == {(k.a, 3), (k.a, 4), (k.b, 3)}
    # A word the tokenizer splits is found where all its terms are.
    assert found(store, got["walrus-seal"]) == [(k.a, 4)]
    assert got["walrus-seal"].count == 1
    assert got["zebra"] == got["!!!"] == TermPostings(0, ())


def test_a_term_in_more_than_limit_items_lists_the_first_and_counts_at_least_limit_plus_one(
    store: RoleStore,
) -> None:
    k = populate(store)
    every = store.namespace_postings("default", ["walrus"], 10)["walrus"]
    first = store.namespace_postings("default", ["walrus"], 2)["walrus"]
    assert first.rows == every.rows[:2]
    assert found(store, first) == [(k.a, 1), (k.a, 2)]
    # "walrus" is in 5 items of the namespace, 9 of the store: SQLite counts the store's
    # (its full-text index knows no namespaces), PostgreSQL the namespace's.
    assert first.count == (5 if isinstance(store, PostgresStore) else 9)
    assert store.namespace_postings("default", ["walrus"], 5)["walrus"] == every


def test_other_namespaces_items_never_leak_into_postings(store: RoleStore) -> None:
    k = populate(store)
    got = store.namespace_postings("other", ["walrus", "seal", "again"], 10)
    assert found(store, got["walrus"]) == [(k.x, s) for s in range(1, 5)]
    assert got["walrus"].count == 4
    assert got["seal"] == got["again"] == TermPostings(0, ())
    assert store.namespace_postings("nobody", ["walrus"], 10)["walrus"] == TermPostings(0, ())


def test_posting_rows_keep_the_rows_in_these_states_matching_the_filter(
    store: RoleStore,
) -> None:
    k = populate(store)
    rows = store.namespace_postings("default", ["walrus"], 10)["walrus"].rows
    in_window = store.posting_rows(rows, (W,))
    assert sorted(in_window.values(), key=lambda p: (p.key, p.seq)) == [
        PostingRow(k.a, 2, 21),
        PostingRow(k.a, 4, 41),
        PostingRow(k.b, 1, 12),
        PostingRow(k.b, 2, 22),
    ]
    assert set(in_window) < set(rows)
    archived = store.posting_rows([*rows, 10**9], (A,))  # a row no item has
    assert list(archived.values()) == [PostingRow(k.a, 1, 11)]
    by_role = store.posting_rows(rows, BOTH, ItemFilter(roles=frozenset({"assistant"})))
    assert sorted((p.key, p.seq) for p in by_role.values()) == [(k.a, 2), (k.a, 4)]
    by_meta = store.posting_rows(rows, BOTH, ItemFilter(metadata={"k": "v"}))
    assert [(p.key, p.seq) for p in by_meta.values()] == [(k.a, 2)]
    by_flag = store.posting_rows(rows, BOTH, ItemFilter(flags=Flag.CODE))
    assert sorted((p.key, p.seq) for p in by_flag.values()) == [(k.b, 1), (k.b, 2)]
    assert store.posting_rows([], BOTH) == {}


# ---------------------------------------------------------------- items


def test_present_items_are_those_that_exist_in_these_states_matching_the_filter(
    store: RoleStore,
) -> None:
    k = populate(store)
    asked = [(k.a, 1), (k.a, 2), (k.a, 99), (k.b, 3), (k.x, 1), (10**9, 1)]
    assert store.present_items(asked, (W,)) == {(k.a, 2), (k.b, 3), (k.x, 1)}
    assert store.present_items(asked, BOTH) == {(k.a, 1), (k.a, 2), (k.b, 3), (k.x, 1)}
    assert store.present_items(asked, (A,)) == {(k.a, 1)}
    user = ItemFilter(roles=frozenset({"user"}))
    assert store.present_items(asked, BOTH, user) == {(k.a, 1), (k.x, 1)}
    assert store.present_items(asked, BOTH, ItemFilter(until=T0 + 2)) == {(k.a, 1), (k.x, 1)}
    assert store.present_items([], BOTH) == set()


def test_namespace_filtered_lists_the_namespaces_matching_items_up_to_limit(
    store: RoleStore,
) -> None:
    k = populate(store)
    user = ItemFilter(roles=frozenset({"user"}))
    # By conversation, state and seq: what both stores give for a filter without times.
    every = [(k.a, 5), (k.a, 1), (k.a, 3), (k.b, 1), (k.b, 2)]
    assert store.namespace_filtered("default", user, BOTH, 100) == every
    assert store.namespace_filtered("default", user, BOTH, 2) == every[:2]
    assert store.namespace_filtered("default", user, (A,), 100) == [(k.a, 1), (k.a, 3)]
    assert store.namespace_filtered("default", user, (ItemState.REVERTED,), 100) == []
    # With a time bound SQLite reads them in time order: the same items.
    later = ItemFilter(since=T0 + 2, metadata={"k": "w"})
    assert store.namespace_filtered("default", later, BOTH, 100) == [(k.a, 4)]
    since = store.namespace_filtered("default", ItemFilter(since=T0 + 2), BOTH, 100)
    assert sorted(since) == [(k.a, s) for s in range(2, 6)] + [(k.b, 2), (k.b, 3)]
    assert store.namespace_filtered("other", user, BOTH, 100) == [(k.x, s) for s in range(1, 5)]
    assert store.namespace_filtered("nobody", user, BOTH, 100) == []


def test_namespace_items_are_read_whole_across_conversations(store: RoleStore) -> None:
    k = populate(store)
    got = store.namespace_items([(k.a, 1), (k.b, 3), (k.x, 2), (k.a, 99), (10**9, 1)])
    assert sorted(got) == sorted([(k.a, 1), (k.b, 3), (k.x, 2)])
    for key, seq in got:
        assert got[key, seq] == store.get_items(key, [seq])[seq]
    assert got[k.a, 1].state == A  # as stored now, not as appended
    assert got[k.b, 3].content == "seal\x00after"
    assert (got[k.b, 3].conversation_id, got[k.x, 2].conversation_id) == ("b", "x")
    assert store.namespace_items([]) == {}


# ---------------------------------------------------------------- vectors


def test_namespace_vectors_are_the_models_vectors_of_items_not_reverted(
    store: RoleStore,
) -> None:
    k = populate(store)
    vectors = unit_vectors(5)
    put = [(k.b, 2), (k.a, 4), (k.a, 1), (k.x, 1), (k.b, 1)]
    store.put_vectors(MODEL, put, vectors)
    store.put_vectors("other-model", [(k.a, 2)], unit_vectors(1, seed=1))
    set_states(store, k.a, [4], ItemState.REVERTED)
    got = store.namespace_vectors("default", MODEL)
    # In item order (a's items were appended first), whatever order they were stored in.
    keys = [(k.a, 1), (k.b, 1), (k.b, 2)]
    assert list(zip(got.keys.tolist(), got.seqs.tolist(), strict=True)) == keys
    assert got.vectors.dtype == np.float32
    np.testing.assert_array_equal(got.vectors, vectors[[put.index(i) for i in keys]])
    other = store.namespace_vectors("default", "other-model")
    assert (other.keys.tolist(), other.seqs.tolist()) == ([k.a], [2])
    none = store.namespace_vectors("nobody", MODEL)
    assert (none.keys.shape, none.seqs.shape, none.vectors.shape) == ((0,), (0,), (0, 0))


# ---------------------------------------------------------------- totals


def test_namespace_totals_follow_every_change_of_the_namespace(store: RoleStore) -> None:
    def truth(ns: str) -> tuple[int, int]:
        keys = [k for k, _ in store.conversation_keys(ns)]
        counts = [store.counts(k, MODEL) for k in keys]
        return sum(c.total for c in counts), sum(c.tokens for c in counts)

    a = new_conversation(store, "a")
    other = new_conversation(store, "x", ns="other")
    add(store, a, [make_item(s, tokens=s, conversation_id="a") for s in range(1, 5)])
    add(store, other, [make_item(1, tokens=50, conversation_id="x")])
    assert store.namespace_totals("default") == truth("default") == (4, 10)
    assert store.namespace_totals("default") == (4, 10)  # unchanged: as read before
    # Every state counts: evicted items stay in the totals.
    add(store, a, [make_item(5, tokens=7, conversation_id="a")], evicted=[1, 2])
    assert store.namespace_totals("default") == truth("default") == (5, 17)
    new_conversation(store, "empty")
    assert store.namespace_totals("default") == truth("default") == (5, 17)
    b = new_conversation(store, "b")
    add(store, b, [make_item(1, tokens=100, conversation_id="b")])
    assert store.namespace_totals("default") == truth("default") == (6, 117)
    store.delete_conversation(b)
    assert store.namespace_totals("default") == truth("default") == (5, 17)
    # A successor with the deleted conversation's item count but other tokens (SQLite may
    # give it the same key: test_sqlite_store).
    c = store.create_conversation("default", "c", ConversationSettings(), T0 + 1).key
    add(store, c, [make_item(1, tokens=1, conversation_id="c")])
    assert store.namespace_totals("default") == truth("default") == (6, 18)
    store.delete_conversation(c)
    assert store.namespace_totals("default") == truth("default") == (5, 17)
    assert store.namespace_totals("other") == (1, 50)
    assert store.namespace_totals("nobody") == (0, 0)
