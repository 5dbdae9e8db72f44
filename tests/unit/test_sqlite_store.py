"""Tests for contextwm.adapters.sqlite: conversations, items, vectors, lexical search."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
import pytest
from contextwm.adapters.sqlite import SqliteStore
from contextwm.adapters.sqlite.schema import SCHEMA_VERSION
from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.facts import Fact, FactKind
from contextwm.domain.items import FileRef, Flag, Item, ItemFilter, ItemState
from contextwm.ports.lexical_store import TermPostings
from contextwm.ports.retention_store import ArchivedRow, RemovedRows
from contextwm.retrieval.ranking import bm25, matched_idf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

MODEL = "test-model"
W, A = ItemState.WINDOW, ItemState.ARCHIVED
BOTH = (W, A)
T0 = 1_700_000_000.0


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def store(path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(path)
    yield s
    s.close()


def make_item(
    seq: int,
    content: str = "",
    *,
    role: str = "user",
    ts: float | None = None,
    tokens: int = 3,
    flags: Flag = Flag.NONE,
    metadata: dict[str, str] | None = None,
    file: FileRef | None = None,
    conversation_id: str = "c1",
) -> Item:
    return Item(
        conversation_id=conversation_id,
        seq=seq,
        role=role,
        content=content or f"item number {seq}",
        timestamp=T0 + seq if ts is None else ts,
        token_count=tokens,
        flags=flags,
        metadata=MappingProxyType(metadata or {}),
        file=file,
        state=W,
    )


def add(
    store: SqliteStore,
    key: int,
    items: Sequence[Item],
    evicted: Sequence[int] = (),
    idems: Sequence[str | None] | None = None,
) -> None:
    store.commit_append(
        key, items, idems if idems is not None else [None] * len(items), evicted, 1000, "general"
    )


def new_conversation(store: SqliteStore, cid: str = "c1", ns: str = "default") -> int:
    return store.create_conversation(ns, cid, ConversationSettings(), T0).key


def search(
    store: SqliteStore,
    key: int,
    *terms: str,
    states: Sequence[ItemState] = BOTH,
    flt: ItemFilter | None = None,
    limit: int = 50,
) -> list[int]:
    """Items holding any of the terms, ranked by BM25 as the engine ranks them."""
    postings = store.term_postings(key, terms, limit)
    weights = matched_idf(postings, items=1000)
    scores = bm25(weights, store.row_items(key, list(weights), states, flt), mean_tokens=10.0)
    return sorted(scores, key=lambda seq: (-scores[seq], seq))


def listed(
    store: SqliteStore,
    key: int,
    term: str,
    states: Sequence[ItemState] = BOTH,
    limit: int = 10,
    flt: ItemFilter | None = None,
) -> list[int]:
    """The seqs of the items term_postings lists for a term, in these states matching flt."""
    rows = store.term_postings(key, [term], limit)[term].rows
    found = store.row_items(key, rows, states, flt)
    return [found[r][0] for r in rows if r in found]


def unit_vectors(n: int, dim: int = 8, seed: int = 0) -> npt.NDArray[np.float32]:
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    out: npt.NDArray[np.float32] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


# ---------------------------------------------------------------- conversations


# ---------------------------------------------------------------- items


def test_items_round_trip_every_field(store: SqliteStore) -> None:
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


def test_eviction_archives_and_list_items_filters_states(store: SqliteStore) -> None:
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


def test_set_flags(store: SqliteStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1, flags=Flag.ERROR)])
    store.set_flags(key, 1, Flag.ERROR | Flag.PINNED)
    assert store.get_items(key, [1])[1].flags == Flag.ERROR | Flag.PINNED


def test_get_items_many(store: SqliteStore) -> None:
    # More seqs than SQLite binds in one statement.
    key = new_conversation(store)
    add(store, key, [make_item(s) for s in range(1, 1201)])
    assert sorted(store.get_items(key, list(range(1, 1201)))) == list(range(1, 1201))


def test_a_commit_larger_than_one_statement(store: SqliteStore) -> None:
    # More items than one INSERT binds and more evictions than one UPDATE names: every item
    # is stored, indexed for search and archived as asked.
    key = new_conversation(store)
    add(store, key, [make_item(s, f"walrus {s}") for s in range(1, 1201)], evicted=range(1, 602))
    counts = store.counts(key, MODEL)
    assert (counts.total, counts.archived) == (1200, 601)
    assert [i.seq for i, _ in store.window_items(key, MODEL)] == list(range(602, 1201))
    assert len(listed(store, key, "walrus", BOTH, 2000)) == 1200


def test_idempotency_lookup(store: SqliteStore) -> None:
    k1, k2 = new_conversation(store, "c1"), new_conversation(store, "c2")
    add(store, k1, [make_item(1), make_item(2)], idems=["req-1", None])
    found = store.find_idempotent(k1, ["req-1", "req-2"])
    assert list(found) == ["req-1"] and found["req-1"].seq == 1
    assert store.find_idempotent(k2, ["req-1"]) == {}  # keys are per conversation
    with pytest.raises(sqlite3.IntegrityError):
        add(store, k1, [make_item(3)], idems=["req-1"])
    assert [i.seq for i in store.list_items(k1, 0, 10, ())] == [1, 2]  # all or nothing


# ---------------------------------------------------------------- lexical search


def test_exact_rare_word_ranks_first(store: SqliteStore) -> None:
    key = new_conversation(store)
    filler = [make_item(s, "we talked about the deploy and the deploy again") for s in range(1, 20)]
    add(store, key, [*filler, make_item(20, "the deploy uses zanzibar as its codename")])
    assert search(store, key, "deploy", "zanzibar")[0] == 20
    assert search(store, key, "zanzibar") == [20]
    assert search(store, key, "nothinglikethis") == []
    assert search(store, key) == []


def test_porter_stemming_matches_word_forms(store: SqliteStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1, "the indexer was running slowly")])
    assert search(store, key, "run") == [1]


def test_search_respects_states(store: SqliteStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1, "kiwi archived"), make_item(2, "kiwi window")])
    add(store, key, [make_item(3, "other")], evicted=[1])
    assert search(store, key, "kiwi", states=(A,)) == [1]
    assert search(store, key, "kiwi", states=(W,)) == [2]
    assert sorted(search(store, key, "kiwi")) == [1, 2]


def test_search_never_returns_another_conversations_items(store: SqliteStore) -> None:
    k1, k2 = new_conversation(store, "a"), new_conversation(store, "b")
    add(store, k1, [make_item(1, "shared word mango", conversation_id="a")])
    add(store, k2, [make_item(s, f"mango {s}", conversation_id="b") for s in range(1, 4)])
    assert listed(store, k1, "mango", BOTH, 10) == [1]
    assert sorted(listed(store, k2, "mango", BOTH, 10)) == [1, 2, 3]


def test_term_equal_to_the_conversation_tag_matches_nothing(store: SqliteStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1, "about apples"), make_item(2, "about pears")])
    # A user asking about "c1" (a cell, a container, a level) must not get every item.
    assert listed(store, key, f"c{key}", BOTH, 10) == []
    assert search(store, key, f"c{key}") == []


def test_search_filters(store: SqliteStore) -> None:
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


def test_term_postings(store: SqliteStore) -> None:
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
    store: SqliteStore,
) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(s, f"walrus number {s}") for s in range(1, 8)])
    got = store.term_postings(key, ["walrus"], 3)["walrus"]
    assert got.count == 7 and len(got.rows) == 3
    assert [seq for seq, _ in store.row_items(key, got.rows, BOTH).values()] == [1, 2, 3]
    # A count the caller knows is not counted again.
    assert store.term_postings(key, ["walrus"], 3, {"walrus": 99})["walrus"].count == 99


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
    tmp_path_factory: pytest.TempPathFactory, pairs: list[tuple[str, str]]
) -> None:
    store = SqliteStore(tmp_path_factory.mktemp("meta") / "s.db")
    try:
        key = new_conversation(store)
        items = [make_item(n + 1, metadata={k: v}) for n, (k, v) in enumerate(pairs)]
        add(store, key, items)
        for k, v in pairs:
            flt = ItemFilter(metadata={k: v})
            got = sorted(store.filtered_seqs(key, flt, BOTH, 100).tolist())
            assert got == [i.seq for i in items if flt.matches(i)], k
    finally:
        store.close()


def test_metadata_filter_key_with_a_double_quote(store: SqliteStore) -> None:
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
def test_fts_syntax_in_terms_never_raises(store: SqliteStore, term: str) -> None:
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
def test_arbitrary_terms_never_raise(store: SqliteStore, terms: list[str]) -> None:
    for term in terms:
        listed(store, 1, term, BOTH, 10)


def test_nul_in_term_does_not_raise(store: SqliteStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1, "abc")])
    assert listed(store, key, "a\x00b", BOTH, 10) == []


# ---------------------------------------------------------------- delete


def raw_count(path: Path, sql: str, *args: object) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute(sql, args).fetchone()[0])
    finally:
        db.close()


def test_delete_removes_items_vectors_and_fts_rows(store: SqliteStore, path: Path) -> None:
    k1, k2 = new_conversation(store, "gone"), new_conversation(store, "kept")
    add(store, k1, [make_item(s, f"walrus {s}", conversation_id="gone") for s in range(1, 5)])
    add(store, k2, [make_item(1, "walrus kept", conversation_id="kept")])
    store.put_vectors(MODEL, [(k1, s) for s in range(1, 5)] + [(k2, 1)], unit_vectors(5))
    assert store.delete_conversation(k1) == 4
    assert store.get_conversation("default", "gone") is None
    assert store.get_items(k1, [1, 2, 3, 4]) == {}
    assert raw_count(path, "SELECT count(*) FROM items WHERE conv = ?", k1) == 0
    assert raw_count(path, "SELECT count(*) FROM vectors") == 1
    # The FTS index forgot the rows: only the kept conversation's row still matches.
    assert raw_count(path, "SELECT count(*) FROM items_fts WHERE items_fts MATCH 'walrus'") == 1
    assert search(store, k1, "walrus") == []
    assert search(store, k2, "walrus") == [1]


def test_deleted_conversation_leaves_nothing_for_a_successor(store: SqliteStore) -> None:
    # Without AUTOINCREMENT SQLite reuses the highest rowids: a new conversation (and its
    # items) can get the deleted one's keys, and stale FTS rows would then match.
    key = new_conversation(store, "old")
    add(store, key, [make_item(1, "platypus secret", conversation_id="old")])
    store.delete_conversation(key)
    new_key = new_conversation(store, "new")
    add(store, new_key, [make_item(1, "something else", conversation_id="new")])
    assert search(store, new_key, "platypus") == []
    assert search(store, new_key, "something") == [1]


def test_remove_items_takes_archived_items_with_their_words_vectors_and_facts(
    store: SqliteStore, path: Path
) -> None:
    key = new_conversation(store)
    items = [make_item(s, f"walrus {s}") for s in range(1, 6)]
    facts = [Fact(FactKind.COMMAND, "make deploy", 2), Fact(FactKind.COMMAND, "make test", 5)]
    store.commit_append(key, items, [None] * 5, [], 1000, "general", facts=facts)
    add(store, key, [], evicted=[1, 2, 3])
    store.put_vectors(MODEL, [(key, s) for s in range(1, 6)], unit_vectors(5))
    assert store.archived_rows(key, MODEL, [3, 2, 9]) == [
        ArchivedRow(2, T0 + 2, False, True),
        ArchivedRow(3, T0 + 3, False, True),
    ]
    # Seq 4 is in the window: it stays whatever the caller asks.
    assert store.remove_items(key, [2, 3, 4]) == RemovedRows(count=2, tokens=6)
    assert [i.seq for i in store.list_items(key, 0, 10, ())] == [1, 4, 5]
    assert raw_count(path, "SELECT count(*) FROM vectors") == 3
    assert sorted(search(store, key, "walrus")) == [1, 4, 5]
    assert raw_count(path, "SELECT count(*) FROM items_fts") == 3
    assert [f.seq for f in store.facts(key)] == [5]
    assert raw_count(path, "SELECT count(*) FROM facts") == 1
    assert raw_count(path, "SELECT removed_items FROM conversations WHERE id = ?", key) == 2
    assert [r.seq for r in store.archived_rows(key, MODEL)] == [1]
    counts = store.counts(key, MODEL)
    assert (counts.total, counts.archived, counts.tokens) == (3, 1, 9)


def test_namespace_totals_follow_every_change_of_the_namespace(store: SqliteStore) -> None:
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
    add(store, a, [make_item(5, tokens=7, conversation_id="a")], evicted=[1, 2])
    assert store.namespace_totals("default") == truth("default") == (5, 17)
    store.remove_items(a, [2])
    assert store.namespace_totals("default") == truth("default") == (4, 15)
    b = new_conversation(store, "b")
    add(store, b, [make_item(1, tokens=100, conversation_id="b")])
    assert store.namespace_totals("default") == truth("default") == (5, 115)
    store.delete_conversation(b)
    # A successor may get the deleted conversation's key and item count: different tokens.
    c = store.create_conversation("default", "c", ConversationSettings(), T0 + 1).key
    add(store, c, [make_item(1, tokens=1, conversation_id="c")])
    assert c == b
    assert store.namespace_totals("default") == truth("default") == (5, 16)
    store.delete_conversation(c)
    assert store.namespace_totals("default") == truth("default") == (4, 15)
    assert store.namespace_totals("other") == (1, 50)


# ---------------------------------------------------------------- vectors


def test_pending_and_put_vectors(store: SqliteStore) -> None:
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
    # items wait for a re-embed, see test_reembed_store.py).
    assert store.counts(k1, "other-model").pending_vectors == 3
    assert store.pending_vectors("other-model", 100) == []
    got = store.vectors_for(k1, [1, 2, 3], MODEL)
    assert list(got) == [2]
    np.testing.assert_array_equal(got[2], vecs[0])
    assert store.counts(k1, MODEL).pending_vectors == 2
    # A row for an item that does not exist is skipped, not an error.
    store.put_vectors(MODEL, [(k1, 99)], unit_vectors(1))
    assert store.counts(k1, MODEL).total == 3


def test_window_items_carry_their_vectors(store: SqliteStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1), make_item(2)])
    vec = unit_vectors(1)
    store.put_vectors(MODEL, [(key, 2)], vec)
    rows = store.window_items(key, MODEL)
    assert rows[0][1] is None
    assert rows[1][1] is not None
    np.testing.assert_array_equal(rows[1][1], vec[0])
    assert store.window_items(key, "other-model")[1][1] is None


def test_archived_vectors_and_ids(store: SqliteStore) -> None:
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


def test_put_vectors_replaces(store: SqliteStore) -> None:
    key = new_conversation(store)
    add(store, key, [make_item(1)])
    a, b = unit_vectors(2)
    store.put_vectors(MODEL, [(key, 1)], a[None])
    store.put_vectors(MODEL, [(key, 1)], b[None])
    np.testing.assert_array_equal(store.vectors_for(key, [1], MODEL)[1], b)


# ---------------------------------------------------------------- durability


def test_data_survives_reopening(path: Path) -> None:
    store = SqliteStore(path, synchronous="FULL")
    cs = ConversationSettings(window_max_tokens=77)
    key = store.create_conversation("ns", "c1", cs, T0).key
    items = [make_item(s, f"durable {s}", metadata={"m": str(s)}) for s in range(1, 5)]
    add(store, key, items, idems=["i1", None, None, None])
    add(store, key, [make_item(5, "durable 5")], evicted=[2])
    vecs = unit_vectors(5)
    store.put_vectors(MODEL, [(key, s) for s in range(1, 6)], vecs)
    store.close()

    again = SqliteStore(path)
    try:
        rec = again.get_conversation("ns", "c1")
        assert rec is not None and rec.key == key and rec.settings == cs and rec.last_seq == 5
        listed = again.list_items(key, 0, 10, ())
        expected = [*items, make_item(5, "durable 5")]
        expected[1] = dataclasses.replace(expected[1], state=A)
        assert listed == expected
        assert again.archived_ids(key, MODEL).tolist() == [2]
        assert sorted(search(again, key, "durable")) == [1, 2, 3, 4, 5]
        assert again.find_idempotent(key, ["i1"])["i1"].seq == 1
        assert again.pending_vectors(MODEL, 10) == []
    finally:
        again.close()


def test_bad_synchronous_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="synchronous"):
        SqliteStore(tmp_path / "x.db", synchronous="OFF")


# ---------------------------------------------------------------- schema


def test_a_version_1_file_is_migrated_in_place(path: Path) -> None:
    store = SqliteStore(path)
    key = new_conversation(store)
    add(store, key, [make_item(1, "before the upgrade", file=FileRef("a.py", "read"))])
    store.close()
    # Turn the file back into what version 1 wrote: no agent-loop columns or tables.
    db = sqlite3.connect(path)
    for table in ("facts", "edits", "compactions", "checkpoints", "events"):
        db.execute(f"DROP TABLE {table}")
    db.execute("DROP INDEX items_file")
    for table, column in (
        ("items", "kind"),
        ("items", "whole_file"),
        ("conversations", "active_start"),
        ("conversations", "reported_tokens"),
        ("conversations", "reported_server_tokens"),
        ("conversations", "last_event"),
    ):
        db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    store = SqliteStore(path)
    try:
        (item,) = store.list_items(key, 0, 10, [])
        assert (item.content, item.kind, item.file) == (
            "before the upgrade",
            "message",
            FileRef("a.py", "read"),
        )
        record = store.conversation_record(key)
        assert record is not None and (record.active_start, record.last_event) == (0, 0)
        assert store.whole_file_copies(key) == {"a.py": 1}
        assert store.checkpoints(key) == [] and store.edits(key) == []
    finally:
        store.close()
    version = sqlite3.connect(path).execute("SELECT value FROM meta").fetchone()[0]
    assert version == str(SCHEMA_VERSION)


def test_a_version_2_file_is_migrated_and_its_activity_read_from_its_items(path: Path) -> None:
    store = SqliteStore(path)
    key = new_conversation(store)
    add(store, key, [make_item(1, "before retention", ts=T0 + 500)])
    store.close()
    # What version 2 wrote: no retention columns.
    db = sqlite3.connect(path)
    for column in ("last_append_at", "removed_items"):
        db.execute(f"ALTER TABLE conversations DROP COLUMN {column}")
    db.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    store = SqliteStore(path)
    try:
        # No append time recorded: the newest of creation and the newest item stands in.
        assert store.last_active(key) == T0 + 500
        store.commit_append(key, [make_item(2)], [None], [], 8000, "general", appended_at=T0 + 9)
        assert store.last_active(key) == T0 + 9  # items may carry older or newer timestamps
        store.commit_append(key, [], [], [1], 8000, "general")  # an eviction is no append
        assert store.last_active(key) == T0 + 9
    finally:
        store.close()


def test_a_newer_file_is_refused(path: Path) -> None:
    SqliteStore(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(RuntimeError, match="schema version 99, newer"):
        SqliteStore(path)


def test_the_wal_shrinks_back_after_a_burst(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("contextwm.adapters.sqlite.database.WAL_SIZE_LIMIT", 64 * 1024)
    store = SqliteStore(path)
    try:
        key = new_conversation(store)
        for start in range(1, 400, 20):
            add(store, key, [make_item(s, "burst " * 200) for s in range(start, start + 20)])
        wal = path.with_name(path.name + "-wal")
        assert wal.stat().st_size > 1024 * 1024
        store.maintain()  # the checkpoint; the next write starts the WAL over and truncates it
        add(store, key, [make_item(401)])
        assert wal.stat().st_size <= 64 * 1024
    finally:
        store.close()
