"""The item, lexical and vector roles of the store, the same tests on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import sqlite3

import numpy as np
import psycopg
import pytest
from contextwm.domain.items import FileRef, Flag, ItemFilter
from contextwm.ports.lexical_store import TermPostings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stores import (
    BOTH,
    MODEL,
    T0,
    A,
    RoleStore,
    W,
    add,
    listed,
    make_item,
    new_conversation,
    search,
    unit_vectors,
)

# Hypothesis runs a test's examples on one store: each gets a conversation of its own.
_EXAMPLES = itertools.count()

# ---------------------------------------------------------------- items


def test_items_round_trip_every_field(store: RoleStore) -> None:
    key = new_conversation(store)
    items = [
        make_item(
            1,
            "plain 🙂 with 汉字 and <|endoftext|>",
            role="assistant",
            ts=T0 + 0.123456,
            tokens=17,
            flags=Flag.CODE | Flag.PINNED,
            metadata={"a.b": "x", "sp ace": "", "k": "v"},
            file=FileRef("src/main.py", "write"),
        ),
        make_item(2, role="file", file=FileRef("README.md", "read")),
        make_item(3, role="error", flags=Flag.ERROR),
    ]
    add(store, key, items)
    got = store.get_items(key, [1, 2, 3, 99])
    assert sorted(got) == [1, 2, 3]
    for item in items:
        assert got[item.seq] == item
        assert dict(got[item.seq].metadata) == dict(item.metadata)
    window = store.window_items(key, MODEL)
    assert [(i, v) for i, v in window] == [(i, None) for i in items]
    assert store.list_items(key, 0, 10, ()) == items
    rec = store.get_conversation("default", "c1")
    assert rec is not None and rec.last_seq == 3 and rec.token_limit == 1000


def test_eviction_archives_and_list_items_filters_states(store: RoleStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(s) for s in range(1, 6)])
    add(store, key, [make_item(6)], evicted=[2, 4])
    assert [i.seq for i, _ in store.window_items(key, MODEL)] == [1, 3, 5, 6]
    assert [i.seq for i in store.list_items(key, 0, 10, (A,))] == [2, 4]
    assert [i.state for i in store.list_items(key, 0, 10, ())] == [W, A, W, A, W, W]
    # Paging after a seq.
    assert [i.seq for i in store.list_items(key, 2, 2, ())] == [3, 4]
    counts = store.counts(key, MODEL)
    assert (counts.total, counts.archived, counts.pending_vectors) == (6, 2, 6)
    assert store.clock_bounds(key) == (T0 + 1, T0 + 6)


def test_set_flags(store: RoleStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1, flags=Flag.ERROR)])
    store.set_flags(key, 1, Flag.ERROR | Flag.PINNED)
    assert store.get_items(key, [1])[1].flags == Flag.ERROR | Flag.PINNED


def test_get_items_many(store: RoleStore) -> None:
    # More seqs than SQLite binds in one statement.
    key = new_conversation(store)
    add(store, key, [make_item(s) for s in range(1, 1201)])
    assert sorted(store.get_items(key, list(range(1, 1201)))) == list(range(1, 1201))


def test_a_commit_larger_than_one_statement(store: RoleStore) -> None:
    # More items than one INSERT binds and more evictions than one UPDATE names: every item
    # is stored, indexed for search and archived as asked.
    key = new_conversation(store)
    add(store, key, [make_item(s, f"walrus {s}") for s in range(1, 1201)], evicted=range(1, 602))
    counts = store.counts(key, MODEL)
    assert (counts.total, counts.archived) == (1200, 601)
    assert [i.seq for i, _ in store.window_items(key, MODEL)] == list(range(602, 1201))
    assert len(listed(store, key, "walrus", BOTH, 2000)) == 1200


def test_idempotency_lookup(store: RoleStore) -> None:
    k1, k2 = new_conversation(store, "c1"), new_conversation(store, "c2")
    add(store, k1, [make_item(1), make_item(2)], idems=["req-1", None])
    found = store.find_idempotent(k1, ["req-1", "req-2"])
    assert list(found) == ["req-1"] and found["req-1"].seq == 1
    assert store.find_idempotent(k2, ["req-1"]) == {}  # keys are per conversation
    with pytest.raises((sqlite3.IntegrityError, psycopg.errors.UniqueViolation)):
        add(store, k1, [make_item(3)], idems=["req-1"])
    assert [i.seq for i in store.list_items(k1, 0, 10, ())] == [1, 2]  # all or nothing


# ---------------------------------------------------------------- lexical search


def test_exact_rare_word_ranks_first(store: RoleStore) -> None:
    key = new_conversation(store)
    filler = [make_item(s, "we talked about the deploy and the deploy again") for s in range(1, 20)]
    add(store, key, [*filler, make_item(20, "the deploy uses zanzibar as its codename")])
    assert search(store, key, "deploy", "zanzibar")[0] == 20
    assert search(store, key, "zanzibar") == [20]
    assert search(store, key, "nothinglikethis") == []
    assert search(store, key) == []


def test_porter_stemming_matches_word_forms(store: RoleStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1, "the indexer was running slowly")])
    assert search(store, key, "run") == [1]


def test_search_respects_states(store: RoleStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1, "kiwi archived"), make_item(2, "kiwi window")])
    add(store, key, [make_item(3, "other")], evicted=[1])
    assert search(store, key, "kiwi", states=(A,)) == [1]
    assert search(store, key, "kiwi", states=(W,)) == [2]
    assert sorted(search(store, key, "kiwi")) == [1, 2]


def test_search_never_returns_another_conversations_items(store: RoleStore) -> None:
    k1, k2 = new_conversation(store, "a"), new_conversation(store, "b")
    add(store, k1, [make_item(1, "shared word mango", conversation_id="a")])
    add(store, k2, [make_item(s, f"mango {s}", conversation_id="b") for s in range(1, 4)])
    assert listed(store, k1, "mango", BOTH, 10) == [1]
    assert sorted(listed(store, k2, "mango", BOTH, 10)) == [1, 2, 3]


def test_term_equal_to_the_conversation_tag_matches_nothing(store: RoleStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1, "about apples"), make_item(2, "about pears")])
    # A user asking about "c1" (a cell, a container, a level) must not get every item.
    assert listed(store, key, f"c{key}", BOTH, 10) == []
    assert search(store, key, f"c{key}") == []


def test_search_filters(store: RoleStore) -> None:
    key = new_conversation(store)
    add(
        store,
        key,
        [
            make_item(1, "lemon one", role="user", ts=T0, metadata={"file.path": "a.py"}),
            make_item(2, "lemon two", role="assistant", ts=T0 + 10, flags=Flag.CODE),
            make_item(
                3,
                "lemon three",
                role="tool",
                ts=T0 + 20,
                flags=Flag.CODE | Flag.ERROR,
                metadata={"file.path": "b.py", "k": "v"},
            ),
            make_item(4, "lemon four", role="user", ts=T0 + 30, metadata={"file.path": "a.py"}),
        ],
    )

    def hits(flt: ItemFilter) -> list[int]:
        return sorted(search(store, key, "lemon", flt=flt))

    assert hits(ItemFilter()) == [1, 2, 3, 4]
    assert hits(ItemFilter(roles=frozenset({"user"}))) == [1, 4]
    assert hits(ItemFilter(roles=frozenset({"user", "tool"}))) == [1, 3, 4]
    assert hits(ItemFilter(flags=Flag.CODE)) == [2, 3]
    assert hits(ItemFilter(flags=Flag.CODE | Flag.ERROR)) == [3]
    assert hits(ItemFilter(since=T0 + 10)) == [2, 3, 4]
    assert hits(ItemFilter(until=T0 + 20)) == [1, 2]  # until is exclusive
    assert hits(ItemFilter(since=T0 + 10, until=T0 + 30)) == [2, 3]
    assert hits(ItemFilter(metadata={"file.path": "a.py"})) == [1, 4]
    assert hits(ItemFilter(metadata={"file.path": "b.py", "k": "v"})) == [3]
    assert hits(ItemFilter(metadata={"file.path": "c.py"})) == []
    assert hits(
        ItemFilter(roles=frozenset({"user"}), metadata={"file.path": "a.py"}, since=T0 + 1)
    ) == [4]
    # filtered_seqs applies the same conditions without a text match, newest first.
    assert store.filtered_seqs(key, ItemFilter(flags=Flag.CODE), BOTH, 10).tolist() == [3, 2]


def test_term_postings(store: RoleStore) -> None:
    k1, k2 = new_conversation(store, "a"), new_conversation(store, "b")
    add(
        store,
        k1,
        [
            make_item(1, "the quokka ran", role="user", conversation_id="a"),
            make_item(2, "no match here", conversation_id="a"),
            make_item(3, "Quokkas everywhere", role="assistant", conversation_id="a"),
            make_item(4, "quokka again", role="user", metadata={"m": "1"}, conversation_id="a"),
        ],
    )
    add(store, k1, [make_item(5, "filler", conversation_id="a")], evicted=[1])
    add(store, k2, [make_item(1, "quokka in b", conversation_id="b")])
    # Porter stemming: "quokkas" is the same term.
    assert sorted(listed(store, k1, "quokka", BOTH, 10)) == [1, 3, 4]
    assert sorted(listed(store, k1, "quokka", (A,), 10)) == [1]
    assert sorted(listed(store, k1, "quokka", (W,), 10)) == [3, 4]
    assert len(listed(store, k1, "quokka", BOTH, 2)) == 2
    assert listed(store, k2, "quokka", BOTH, 10) == [1]
    assert sorted(listed(store, k1, "quokka", BOTH, 10, ItemFilter(roles=frozenset({"user"})))) == [
        1,
        4,
    ]
    assert listed(store, k1, "quokka", BOTH, 10, ItemFilter(metadata={"m": "1"})) == [4]
    assert listed(store, k1, "absent", BOTH, 10) == []
    for term in ['"', "*", "AND", "-", "NEAR(", 'a"b']:
        assert listed(store, k1, term, BOTH, 10) == []
    # The count is the conversation's whatever the states and filter; tokens come along.
    got = store.term_postings(k1, ["quokka", "absent"], 10)
    assert got["quokka"].count == 3 and len(got["quokka"].rows) == 3
    assert got["absent"] == TermPostings(0, ())
    # row_items gives (seq, tokens) of the rows in the states asked for.
    assert list(store.row_items(k1, got["quokka"].rows, (A,)).values()) == [(1, 3)]


def test_term_postings_of_a_common_term_list_the_first_items_and_count_them_all(
    store: RoleStore,
) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(s, f"walrus number {s}") for s in range(1, 8)])
    got = store.term_postings(key, ["walrus"], 3)["walrus"]
    assert got.count == 7 and len(got.rows) == 3
    assert [seq for seq, _ in store.row_items(key, got.rows, BOTH).values()] == [1, 2, 3]


METADATA_KEYS = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters='"\x00'),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(METADATA_KEYS, st.sampled_from(["x", "y", "1"])), min_size=1, max_size=6))
def test_metadata_filter_matches_exactly_like_item_filter(
    store: RoleStore, pairs: list[tuple[str, str]]
) -> None:
    key = new_conversation(store, f"c{next(_EXAMPLES)}")
    items = [make_item(n + 1, metadata={k: v}) for n, (k, v) in enumerate(pairs)]
    add(store, key, items)
    for k, v in pairs:
        flt = ItemFilter(metadata={k: v})
        got = sorted(store.filtered_seqs(key, flt, BOTH, 100).tolist())
        assert got == [i.seq for i in items if flt.matches(i)], k


def test_metadata_filter_key_with_a_double_quote(store: RoleStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1, metadata={'say "hi"': "v"})])
    assert store.filtered_seqs(key, ItemFilter(metadata={'say "hi"': "v"}), BOTH, 10).tolist() == [
        1
    ]


@pytest.mark.parametrize(
    "term",
    [
        '"',
        '""',
        "*",
        "a*",
        "AND",
        "OR",
        "NOT",
        "-",
        "-x",
        "NEAR(a b)",
        "^",
        ":",
        "tag:c1",
        "content:x",
        "(",
        ")",
        "{content}",
        'a"b',
        "",
        " ",
        "'",
        "\\",
        "+",
        "🙂",
    ],
)
def test_fts_syntax_in_terms_never_raises(store: RoleStore, term: str) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1, 'a b c AND OR NOT x "quoted" star* caret^')])
    listed(store, key, term, BOTH, 10)
    assert search(store, key, term, "caret") == [1]  # the other term still matches


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.text(
            alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"),
            max_size=10,
        ),
        max_size=5,
    )
)
def test_arbitrary_terms_never_raise(store: RoleStore, terms: list[str]) -> None:
    for term in terms:
        listed(store, 1, term, BOTH, 10)


def test_nul_in_term_does_not_raise(store: RoleStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1, "abc")])
    assert listed(store, key, "a\x00b", BOTH, 10) == []


# ---------------------------------------------------------------- delete


def test_deleted_conversation_leaves_nothing_for_a_successor(store: RoleStore) -> None:
    # Without AUTOINCREMENT SQLite reuses the highest rowids: a new conversation (and its
    # items) can get the deleted one's keys, and stale FTS rows would then match.
    key = new_conversation(store, "old")
    add(store, key, [make_item(1, "platypus secret", conversation_id="old")])
    store.delete_conversation(key)
    new_key = new_conversation(store, "new")
    add(store, new_key, [make_item(1, "something else", conversation_id="new")])
    assert search(store, new_key, "platypus") == []
    assert search(store, new_key, "something") == [1]


# ---------------------------------------------------------------- vectors


def test_pending_and_put_vectors(store: RoleStore) -> None:
    k1, k2 = new_conversation(store, "a"), new_conversation(store, "b")
    add(store, k1, [make_item(s, conversation_id="a") for s in range(1, 4)])
    add(store, k2, [make_item(s, conversation_id="b") for s in range(1, 3)])
    pending = store.pending_vectors(MODEL, 100)
    assert [(p.conversation_key, p.seq) for p in pending] == [
        (k1, 1),
        (k1, 2),
        (k1, 3),
        (k2, 1),
        (k2, 2),
    ]
    assert pending[0].text == "item number 1"
    ids = [p.item_id for p in pending]
    assert ids == sorted(ids)
    # Limit and cursor.
    assert [p.seq for p in store.pending_vectors(MODEL, 2)] == [1, 2]
    assert [p.item_id for p in store.pending_vectors(MODEL, 10, ids[2])] == ids[3:]

    vecs = unit_vectors(2)
    store.put_vectors(MODEL, [(k1, 2), (k2, 1)], vecs)
    assert [(p.conversation_key, p.seq) for p in store.pending_vectors(MODEL, 100)] == [
        (k1, 1),
        (k1, 3),
        (k2, 2),
    ]
    # Vectors are per model; to another model's indexer these conversations are stale (their
    # items wait for a re-embed, see test_store_reembed.py).
    assert store.counts(k1, "other-model").pending_vectors == 3
    assert store.pending_vectors("other-model", 100) == []
    got = store.vectors_for(k1, [1, 2, 3], MODEL)
    assert list(got) == [2]
    np.testing.assert_array_equal(got[2], vecs[0])
    assert store.counts(k1, MODEL).pending_vectors == 2
    # A row for an item that does not exist is skipped, not an error.
    store.put_vectors(MODEL, [(k1, 99)], unit_vectors(1))
    assert store.counts(k1, MODEL).total == 3


def test_window_items_carry_their_vectors(store: RoleStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1), make_item(2)])
    vec = unit_vectors(1)
    store.put_vectors(MODEL, [(key, 2)], vec)
    rows = store.window_items(key, MODEL)
    assert rows[0][1] is None
    assert rows[1][1] is not None
    np.testing.assert_array_equal(rows[1][1], vec[0])
    assert store.window_items(key, "other-model")[1][1] is None


def test_archived_vectors_and_ids(store: RoleStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(s) for s in range(1, 7)])
    add(store, key, [make_item(7)], evicted=[5, 1, 3, 4])
    vecs = unit_vectors(7)
    # Items 4 has no vector: archived but not (yet) indexable.
    rows = [(key, s) for s in (1, 2, 3, 5, 6, 7)]
    store.put_vectors(MODEL, rows, vecs[[0, 1, 2, 4, 5, 6]])
    seqs, matrix = store.archived_vectors(key, MODEL)
    assert seqs.tolist() == [1, 3, 5]
    np.testing.assert_array_equal(matrix, vecs[[0, 2, 4]])
    assert store.archived_ids(key, MODEL).tolist() == [1, 3, 5]
    empty_seqs, empty = store.archived_vectors(key, "other-model")
    assert len(empty_seqs) == 0 and len(empty) == 0


def test_put_vectors_replaces(store: RoleStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1)])
    a, b = unit_vectors(2)
    store.put_vectors(MODEL, [(key, 1)], a[None])
    store.put_vectors(MODEL, [(key, 1)], b[None])
    np.testing.assert_array_equal(store.vectors_for(key, [1], MODEL)[1], b)
