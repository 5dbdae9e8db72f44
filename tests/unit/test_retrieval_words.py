"""A query's words are looked up outside the conversation's lock; a change to the
conversation between the lookup and the ranking must not let a stale lookup into the
answer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from contextwm.agent_loop.loop import AgentLoop
from contextwm.conversations.engine import ContextEngine
from contextwm.domain.conversations import SettingsPatch
from contextwm.domain.items import NewItem
from contextwm.ports.embedder import Embedder
from contextwm.retrieval.query import QueryReader
from contextwm.retrieval.ranker import Ranker
from contextwm.retrieval.requests import ContextRequest
from contextwm.retrieval.retriever import Retriever
from hashing_engine import hashing_engine

NS, CID = "default", "c"
RARE = "the zebrafish tank manual is in room 12"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[ContextEngine]:
    with hashing_engine(tmp_path, index_wait_seconds=0.0) as engine:
        engine.create_conversation(NS, CID, SettingsPatch(window_max_items=4))
        fillers = [NewItem(role="user", content=f"filler turn {k}") for k in range(6)]
        engine.append(NS, CID, fillers)
        AgentLoop(engine).create_checkpoint(NS, CID, "before")
        engine.append(NS, CID, [NewItem(role="user", content=RARE)])
        engine.append(NS, CID, [NewItem(role="user", content=f"later turn {k}") for k in range(6)])
        yield engine


class ChangingReader(QueryReader):
    """Makes a change right after it has looked up a query's words, before the ranking."""

    def __init__(self, embedder: Embedder, ranker: Ranker, change: Callable[[], object]) -> None:
        super().__init__(embedder, ranker)
        self.change = change

    def _words(self, *args: Any) -> Any:
        words = super()._words(*args)
        self.change()
        return words


def _returned(retriever: Retriever) -> list[str]:
    ctx = retriever.get_context(NS, CID, ContextRequest("zebrafish", max_tokens=512))
    return [s.item.content for s in (*ctx.recent, *ctx.history)]


def test_the_words_of_the_query_find_an_archived_item(engine: ContextEngine) -> None:
    assert RARE in _returned(Retriever(engine))


def test_a_change_after_the_words_are_looked_up_voids_them(engine: ContextEngine) -> None:
    retriever = Retriever(engine)
    retriever.reader = ChangingReader(
        engine.embedder,
        retriever.ranking.ranker,
        # Reverts the rare item, which the lookup found.
        lambda: AgentLoop(engine).restore_checkpoint(NS, CID, "before"),
    )
    assert RARE not in _returned(retriever)


def test_an_event_that_anchors_a_time_range_stays_in_the_search(engine: ContextEngine) -> None:
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
