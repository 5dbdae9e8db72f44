"""The ranker's cache of term postings: terms read from the store once while current, and the
least recently used dropped past its bound."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from contextwm.adapters.sqlite import SqliteStore
from contextwm.conversations.engine import ContextEngine
from contextwm.domain.conversations import SettingsPatch
from contextwm.domain.items import NewItem
from contextwm.ports.lexical_store import TermPostings
from contextwm.retrieval import ranker as ranker_module
from contextwm.retrieval.ranker import Ranker
from hashing_engine import hashing_engine

NS, CID = "default", "c"
WORDS = ["otter", "heron", "badger", "marten", "stoat"]


class CountingStore(SqliteStore):
    """Counts the terms whose postings are read."""

    read: list[str]

    def term_postings(self, key: int, terms: Sequence[str], limit: int) -> dict[str, TermPostings]:
        self.read.extend(terms)
        return super().term_postings(key, terms, limit)


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[tuple[ContextEngine, CountingStore]]:
    store = CountingStore(tmp_path / "db.sqlite3")
    store.read = []
    with hashing_engine(tmp_path, store, index_wait_seconds=0.0) as engine:
        engine.create_conversation(NS, CID, SettingsPatch(window_max_items=2))
        engine.append(NS, CID, [NewItem(role="user", content=f"the {w} swims") for w in WORDS])
        yield engine, store


def test_postings_are_read_once_then_the_least_recently_used_go(
    parts: tuple[ContextEngine, CountingStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, store = parts
    monkeypatch.setattr(ranker_module, "MAX_CACHED_TERMS", 3)
    ranker = Ranker(store, engine.vectors, engine.embedder.model_name)
    rt = engine.runtimes.get(NS, CID)

    def look_up(*terms: str) -> list[str]:
        store.read.clear()
        found = ranker._postings(rt, terms, as_of=(rt.total, rt.last_seq))
        assert all(found[t].count >= 1 for t in terms)
        return list(store.read)

    assert look_up("otter", "heron", "badger") == ["otter", "heron", "badger"]
    assert look_up("otter", "heron", "badger") == []  # all cached
    assert look_up("otter") == []  # otter is now the most recently used
    assert look_up("marten") == ["marten"]  # over the bound: heron, the least recent, goes
    assert list(rt.term_postings) == ["badger", "otter", "marten"]
    assert look_up("otter", "badger") == []
    assert look_up("heron") == ["heron"]
    # A new item makes rare terms' postings stale: they are read again.
    engine.append(NS, CID, [NewItem(role="user", content="the otter again")])
    assert look_up("otter") == ["otter"]
