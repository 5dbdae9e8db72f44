"""A query's words are looked up while it is embedded, outside the conversation's lock; a
change to the conversation in between must not let a stale lookup into the answer."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from contextwm.adapters.embedder_fake import HashingEmbedder
from contextwm.adapters.faiss_index import FaissIndexFiles
from contextwm.adapters.sqlite import SqliteStore
from contextwm.adapters.tokens_bpe import token_counter
from contextwm.agent_loop.loop import AgentLoop
from contextwm.conversations.engine import ContextEngine
from contextwm.domain.conversations import SettingsPatch
from contextwm.domain.items import NewItem
from contextwm.ports.embedder import Embedder, Vectors
from contextwm.retrieval.query import QueryReader
from contextwm.retrieval.ranker import Ranker
from contextwm.retrieval.requests import ContextRequest
from contextwm.retrieval.retriever import Retriever

NS, CID = "default", "c"
RARE = "the zebrafish tank manual is in room 12"


class HookedEmbedder(HashingEmbedder):
    """Runs a hook once, on the next embed call: a change made while a query is embedded."""

    def __init__(self) -> None:
        super().__init__(32)
        self.hook: Callable[[], None] | None = None

    def embed(self, texts: Sequence[str]) -> Vectors:
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return super().embed(texts)


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[tuple[ContextEngine, HookedEmbedder]]:
    store = SqliteStore(tmp_path / "db.sqlite3")
    embedder = HookedEmbedder()
    engine = ContextEngine(
        store,
        embedder,
        FaissIndexFiles(tmp_path / "indexes", embedder.dimension),
        token_counter,
        index_wait_seconds=0.0,
    )
    engine.create_conversation(NS, CID, SettingsPatch(window_max_items=4))
    engine.append(NS, CID, [NewItem(role="user", content=f"filler turn {k}") for k in range(6)])
    AgentLoop(engine).create_checkpoint(NS, CID, "before")
    engine.append(NS, CID, [NewItem(role="user", content=RARE)])
    engine.append(NS, CID, [NewItem(role="user", content=f"later turn {k}") for k in range(6)])
    yield engine, embedder
    store.close()


class SignallingReader(QueryReader):
    """Says when a query's words have been looked up."""

    def __init__(self, embedder: Embedder, ranker: Ranker) -> None:
        super().__init__(embedder, ranker)
        self.looked_up = threading.Event()

    def _words(self, *args: Any) -> Any:
        try:
            return super()._words(*args)
        finally:
            self.looked_up.set()


def _returned(retriever: Retriever) -> list[str]:
    ctx = retriever.get_context(NS, CID, ContextRequest("zebrafish", max_tokens=512))
    return [s.item.content for s in (*ctx.recent, *ctx.history)]


def test_the_words_of_the_query_find_an_archived_item(
    parts: tuple[ContextEngine, HookedEmbedder],
) -> None:
    engine, _ = parts
    assert RARE in _returned(Retriever(engine))


def test_a_change_while_the_query_is_embedded_voids_the_words_looked_up_before_it(
    parts: tuple[ContextEngine, HookedEmbedder],
) -> None:
    engine, embedder = parts
    retriever = Retriever(engine)
    reader = retriever.reader = SignallingReader(engine.embedder, retriever.ranking.ranker)

    def revert_once_looked_up() -> None:
        assert reader.looked_up.wait(10)
        AgentLoop(engine).restore_checkpoint(NS, CID, "before")  # reverts the rare item

    embedder.hook = revert_once_looked_up
    assert RARE not in _returned(retriever)


def test_an_event_that_anchors_a_time_range_stays_in_the_search(
    parts: tuple[ContextEngine, HookedEmbedder],
) -> None:
    engine, _ = parts
    engine.append(NS, CID, [NewItem(role="user", content="I had a car accident on the highway")])
    engine.append(NS, CID, [NewItem(role="user", content=f"calm turn {k}") for k in range(3)])
    retriever = Retriever(engine)
    rt = engine.runtimes.get(NS, CID)
    q = retriever.reader.read(rt, "How did I feel after the accident?", as_of=None)
    assert q.hint is not None and q.hint.since is not None  # read as a range after the event
    assert "accident" in q.search.split()  # the event is what is asked about, too
    assert "after" not in q.search.split()
    plain = retriever.reader.read(rt, "How did I feel last week?", as_of=None)
    assert plain.hint is not None and "week" not in plain.search.split()
