"""What the statistics ask of the SQLite store alone: the plans of their queries, and the
indexes they read (their figures, paging and snapshot: test_store_stats)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from contextwm.adapters.sqlite import SqliteStore
from contextwm.domain.scope import Scope
from contextwm.domain.stats import StoreStats
from filled_scopes import fill
from stores import MODEL

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


def test_every_query_reads_covering_indexes_only(store: SqliteStore) -> None:
    # Items and vectors are read from indexes, never from their rows (content, blobs): what
    # keeps the statistics cheap on a large store.
    fill(store)
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
