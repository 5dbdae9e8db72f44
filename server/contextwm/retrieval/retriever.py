"""The enhanced context: the recent window plus relevant history under a token budget, laid
out by relevance (the default) or by a fixed recent share; and search, over the engine."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from contextwm.conversations.embedding_model import require_current
from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.domain.items import ItemState, ScoredItem, ScoreParts
from contextwm.retrieval import neighbours
from contextwm.retrieval.namespace_search import NamespaceSearchStore
from contextwm.retrieval.neighbours import HistoryCandidate
from contextwm.retrieval.query import Query, QueryReader
from contextwm.retrieval.ranker import Ranker
from contextwm.retrieval.ranking import Ranked
from contextwm.retrieval.relevant_assembly import assemble_relevant
from contextwm.retrieval.requests import (
    ContextRequest,
    EnhancedContext,
    SearchOutcome,
    SearchRequest,
    check_context_request,
)
from contextwm.retrieval.search import search
from contextwm.retrieval.split_assembly import assemble_split

# Everything a context may draw on: the window and the archive, compacted items included.
ALL_STATES = (ItemState.ARCHIVED, ItemState.COMPACTED, ItemState.WINDOW)


class Retriever:
    """Thread-safe: each call holds its conversation's lock only around the in-memory parts."""

    def __init__(self, engine: ContextEngine) -> None:
        # The engine is where the parts are built; retrieval keeps only those it uses.
        self.runtimes = engine.runtimes
        self.vectors = engine.vectors
        self.counters = engine.counters
        self.limits = engine.limits
        self.store: NamespaceSearchStore = engine.store
        self.ranker = Ranker(engine.store, engine.vectors, engine.embedder.model_name)
        self.reader = QueryReader(engine.embedder, self.ranker)

    def get_context(
        self, namespace: str, conversation_id: str, request: ContextRequest
    ) -> EnhancedContext:
        """The recent window plus relevant history under request.max_tokens.

        Raises:
            InvalidArgument: bad options, or a budget that cannot hold the query.
            NotFound: no such conversation.
            FailedPrecondition: dense or hybrid mode on a conversation whose vectors come
                from another model (see conversations.embedding_model).
        """
        check_context_request(request, self.limits)
        rt = self.runtimes.get(namespace, conversation_id)
        require_current([rt], self.ranker.model_name, request.mode)
        self.vectors.wait_indexed(rt)
        settings = rt.record.settings
        counter = self.counters(settings.encoding)
        asked = self.read(rt, request, ALL_STATES)
        shown = self.ranker.shown
        with rt.lock:
            q = self.reader.focused(rt, asked)
            if request.recent_share is None:
                window, hits, unmeasured = self._relevant(rt, q, request)
                clock = rt.clock()
            else:
                focus = rt.window.focus_vector(settings.focus_items)
                window = [shown(rt, w) for w in self.ranker.scored_window(rt, focus)]
                candidates = [
                    HistoryCandidate(shown(rt, c.hit), c.neighbor and shown(rt, c.neighbor))
                    for c in self.history(rt, q, request, ALL_STATES)
                ]
            unindexed = rt.pending
            state = rt.state
        if request.recent_share is None:
            assembled = assemble_relevant(
                window,
                hits,
                query=q.text,
                budget=request.max_tokens,
                keep_newest=settings.recent_min_items,
                counter=counter,
            )
            finish = self.ranker.finish
            assembled = dataclasses.replace(
                assembled,
                recent=finish(rt, assembled.recent, q.vector, q.hint, unmeasured, clock),
                history=finish(rt, assembled.history, q.vector, q.hint, unmeasured, clock),
            )
        else:
            assembled = assemble_split(
                window,
                candidates,
                query=q.text,
                budget=request.max_tokens,
                recent_share=request.recent_share,
                counter=counter,
            )
        return EnhancedContext(
            recent=assembled.recent,
            history=assembled.history,
            text=assembled.text,
            query=q.text if q.text is not None else q.search,
            query_from_focus=q.text is None,
            tokens=assembled.tokens,
            time_hint=q.hint,
            unindexed_items=unindexed,
            state=state,
        )

    def search(self, namespace: str, request: SearchRequest) -> SearchOutcome:
        """Hybrid search over one conversation or every conversation of a namespace.

        Raises:
            InvalidArgument: bad options. NotFound: a named conversation that does not exist.
            FailedPrecondition: dense or hybrid mode over a conversation whose vectors come
                from another model.
        """
        return search(
            self.store,
            self.runtimes,
            self.vectors,
            self.ranker,
            self.reader,
            self.limits,
            namespace,
            request,
        )

    def read(
        self, rt: ConversationRuntime, request: ContextRequest, states: tuple[ItemState, ...]
    ) -> Query:
        """The request's query, its words looked up in these states unless it asks for dense
        ranking alone (no lock held)."""
        return self.reader.read(
            rt,
            request.query,
            as_of=request.as_of,
            time_hints=request.time_hints,
            look_up=(states, request.hits) if request.mode != "dense" else None,
        )

    def history(
        self,
        rt: ConversationRuntime,
        q: Query,
        request: ContextRequest,
        states: tuple[ItemState, ...],
    ) -> list[HistoryCandidate]:
        """History hits for the query with their neighbours, best first (rt.lock held)."""
        ranked = self._ranked(rt, q, request, states)
        hits = self.ranker.scored(rt, ranked[: request.hits], q.hint)
        if not request.include_neighbors:
            return [HistoryCandidate(h) for h in hits]
        return neighbours.paired(self.ranker, rt, hits, q.hint)

    def _relevant(
        self, rt: ConversationRuntime, q: Query, request: ContextRequest
    ) -> tuple[list[ScoredItem], list[ScoredItem], set[int]]:
        """(every window item scored for the query, ranked candidates with their neighbours,
        the candidates whose similarity is not measured yet) for the default context, which
        lets relevance share the budget (rt.lock held)."""
        ranked = self._ranked(rt, q, request, ALL_STATES, measure_all=False)
        hits = self.ranker.scored(rt, ranked[: request.hits], q.hint, full_parts=False)
        if request.include_neighbors:
            hits = neighbours.with_neighbours(self.ranker, rt, hits, q.hint)
        hits = [self.ranker.shown(rt, h) for h in hits]
        by_seq = {h.item.seq: h for h in hits}
        unranked = ScoreParts()
        window = [
            by_seq.get(e.item.seq) or self.ranker.shown(rt, ScoredItem(e.item, 0.0, unranked))
            for e in rt.window
        ]
        unmeasured = {r.seq for r in ranked if not r.measured}
        unmeasured.update(e.item.seq for e in rt.window if e.item.seq not in by_seq)
        return window, hits, unmeasured

    def _ranked(
        self,
        rt: ConversationRuntime,
        q: Query,
        request: ContextRequest,
        states: Sequence[ItemState],
        *,
        measure_all: bool = True,
    ) -> list[Ranked]:
        """The ranking a context request asks for (rt.lock held)."""
        found = self.ranker.signals(
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
        threshold = self.ranker.threshold(rt, request.similarity_threshold, request.mode)
        ranked = self.ranker.rank(rt, found, threshold=threshold, mode=request.mode)
        if request.mode != "hybrid":
            return ranked
        return self.ranker.with_feedback(
            rt, found, ranked, q.search, states=states, limit=request.hits, threshold=threshold
        )
