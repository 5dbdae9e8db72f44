"""What a context draws on, ranked for its query in one call: the window's items, and the
history hits with the turns that ask or answer them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from contextwm.conversations.runtime import ConversationRuntime
from contextwm.domain.items import ItemState, ScoredItem, ScoreParts
from contextwm.retrieval import neighbours
from contextwm.retrieval.neighbours import HistoryCandidate
from contextwm.retrieval.query import Query
from contextwm.retrieval.ranker import Ranker
from contextwm.retrieval.ranking import Ranked
from contextwm.retrieval.requests import ContextRequest
from contextwm.window.window import Vector

# Everything a context may draw on: the window and the archive, compacted items included.
ALL_STATES = (ItemState.ARCHIVED, ItemState.COMPACTED, ItemState.WINDOW)

Finish = Callable[[tuple[ScoredItem, ...]], tuple[ScoredItem, ...]]


@dataclass(frozen=True, slots=True)
class Relevance:
    """The default context's candidates, where relevance shares the budget.

    Attributes:
        window: Every window item, ranked for the query where the ranking found it.
        hits: Ranked candidates from every state with their neighbours, best first.
        finish: Completes the score parts of the items a context returns (ranking leaves
            out those it does not need); takes no lock.
    """

    window: list[ScoredItem]
    hits: list[ScoredItem]
    finish: Finish


class ContextRanker:
    """Ranks for enhanced contexts over a Ranker. Its methods take rt.lock held; the items
    they return show superseded file copies as their notices."""

    def __init__(self, ranker: Ranker) -> None:
        self.ranker = ranker

    @property
    def model_name(self) -> str:
        return self.ranker.model_name

    def relevance(self, rt: ConversationRuntime, q: Query, request: ContextRequest) -> Relevance:
        """The window and the best request.hits candidates of every state, for the query."""
        ranker = self.ranker
        ranked = self._ranked(rt, q, request, ALL_STATES, measure_all=False)
        hits = ranker.scored(rt, ranked[: request.hits], q.hint, full_parts=False)
        if request.include_neighbors:
            hits = neighbours.with_neighbours(ranker, rt, hits, q.hint)
        hits = [ranker.shown(rt, h) for h in hits]
        by_seq = {h.item.seq: h for h in hits}
        unranked = ScoreParts()
        window = [
            by_seq.get(e.item.seq) or ranker.shown(rt, ScoredItem(e.item, 0.0, unranked))
            for e in rt.window
        ]
        unmeasured = {r.seq for r in ranked if not r.measured}
        unmeasured.update(e.item.seq for e in rt.window if e.item.seq not in by_seq)
        finish = functools.partial(
            ranker.finish,
            rt,
            query_vec=q.vector,
            hint=q.hint,
            unmeasured=frozenset(unmeasured),
            clock=rt.clock(),
        )
        return Relevance(window, hits, finish)

    def history(
        self,
        rt: ConversationRuntime,
        q: Query,
        request: ContextRequest,
        states: tuple[ItemState, ...],
    ) -> list[HistoryCandidate]:
        """The best request.hits candidates in these states, each with its neighbouring turn
        when the request asks for neighbours, best first."""
        ranker = self.ranker
        ranked = self._ranked(rt, q, request, states)
        hits = [ranker.shown(rt, h) for h in ranker.scored(rt, ranked[: request.hits], q.hint)]
        if not request.include_neighbors:
            return [HistoryCandidate(h) for h in hits]
        return [
            HistoryCandidate(c.hit, c.neighbor and ranker.shown(rt, c.neighbor))
            for c in neighbours.paired(ranker, rt, hits, q.hint)
        ]

    def window(self, rt: ConversationRuntime, focus: Vector | None) -> list[ScoredItem]:
        """Every window item with its eviction score against focus."""
        return [self.ranker.shown(rt, w) for w in self.ranker.scored_window(rt, focus)]

    def _ranked(
        self,
        rt: ConversationRuntime,
        q: Query,
        request: ContextRequest,
        states: Sequence[ItemState],
        *,
        measure_all: bool = True,
    ) -> list[Ranked]:
        """The ranking a context request asks for; in hybrid mode with a feedback round."""
        ranker = self.ranker
        found = ranker.signals(
            rt,
            q.vector,
            q.search,
            states=states,
            mode=request.mode,
            hint=q.hint,
            flt=None,
            limit=request.hits,
            measure_all=measure_all,
            lexical=q.lexical(tuple(states)),
        )
        threshold = ranker.threshold(rt, request.similarity_threshold, request.mode)
        ranked = ranker.rank(rt, found, threshold=threshold, mode=request.mode, limit=request.hits)
        if request.mode != "hybrid":
            return ranked
        return ranker.with_feedback(
            rt, found, ranked, q.search, states=states, limit=request.hits, threshold=threshold
        )
