"""The statistics role of the store (StatsStore), the same tests on SQLite and PostgreSQL:
the figures against a count of the listed items, their paging, and their snapshot."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from contextwm.adapters.postgres.store import PostgresStore
from contextwm.adapters.sqlite import SqliteStore
from contextwm.domain.scope import Scope
from contextwm.domain.stats import StoreStats
from filled_scopes import counted, fill, item
from stores import MODEL, T0, RoleStore, new_conversation

EVERY = Scope(None)
START = ("", "")


def test_figures_match_the_listed_items_per_conversation_and_scope(store: RoleStore) -> None:
    keys = fill(store)
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
    assert total.index_bytes == 0  # the store has no index files to measure

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


def test_vectors_are_counted_for_the_model_asked(store: RoleStore) -> None:
    fill(store)
    # Each conversation with items has one vector of the other model (seq 3, archived).
    other = store.stats(EVERY, "other-model", START, 100)
    assert other.total.vectors == 3
    assert [c.stats.vectors for c in other.conversations] == [1, 1, 1, 0]
    assert other.total.items == store.stats(EVERY, MODEL, START, 100).total.items
    assert store.stats(Scope("team-a", "a1"), "no-model", START, 1).total.vectors == 0


def test_pages_resume_after_a_conversation_and_totals_cover_the_scope(store: RoleStore) -> None:
    keys = fill(store)
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
    # A limit of 0 (the metrics' whole-store figures) reads no page, only the totals.
    none = store.stats(EVERY, MODEL, START, 0)
    assert (none.conversations, none.total, len(none.keys)) == ((), whole, 4)


def test_pages_come_in_byte_order_of_namespace_and_id(store: RoleStore) -> None:
    # As SQLite compares text: whatever the database's locale, pages come in one order.
    names = [("b", "x"), ("B", "x"), ("a", "é"), ("a", "Z"), ("a", "_"), ("é", "a")]
    for ns, cid in names:
        new_conversation(store, cid, ns)
    ordered = sorted(names, key=lambda n: (n[0].encode(), n[1].encode()))
    found = store.stats(EVERY, MODEL, START, 100).conversations
    assert [(c.namespace, c.conversation_id) for c in found] == ordered
    after = store.stats(EVERY, MODEL, ordered[2], 100).conversations
    assert [(c.namespace, c.conversation_id) for c in after] == ordered[3:]


@contextmanager
def committing_before_query(
    store: RoleStore, query: int, commit: Callable[[], None]
) -> Iterator[None]:
    """Runs commit (on another connection) just before the query-th SELECT of the
    statistics: on SQLite by tracing its reader, on PostgreSQL by wrapping its snapshot."""
    selects = 0

    def before(statement: str) -> None:
        nonlocal selects
        if statement.lstrip().startswith("SELECT"):
            selects += 1
            if selects == query:
                commit()

    if isinstance(store, SqliteStore):
        db = store._reader()
        db.set_trace_callback(before)
        try:
            yield
        finally:
            db.set_trace_callback(None)
        return
    assert isinstance(store, PostgresStore)
    snapshot = store._snapshot

    class Traced:
        def __init__(self, conn: Any) -> None:
            self._conn = conn

        def execute(self, statement: str, *args: Any) -> Any:
            before(statement)
            return self._conn.execute(statement, *args)

    @contextmanager
    def traced() -> Iterator[Any]:
        with snapshot() as conn:
            yield Traced(conn)

    store._snapshot = traced  # type: ignore[method-assign]
    try:
        yield
    finally:
        del store._snapshot


def test_the_page_and_the_totals_come_from_one_snapshot(store: RoleStore) -> None:
    keys = fill(store)

    def append() -> None:
        store.commit_append(keys["team-a", "a1"], [item(100, 5, T0)], [None], [], 1000, "general")

    # Just before the totals are read (the fourth query), another append commits.
    with committing_before_query(store, 4, append):
        found = store.stats(EVERY, MODEL, START, 100)
    assert found.total.items == sum(c.stats.items for c in found.conversations)
    assert store.stats(EVERY, MODEL, START, 100).total.items == found.total.items + 1
