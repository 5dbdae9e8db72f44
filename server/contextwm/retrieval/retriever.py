"""The enhanced context: the recent window plus relevant history under a token budget, laid
out by relevance (the default) or by a fixed recent share; and search, over the engine."""

from __future__ import annotations

import dataclasses

from contextwm.conversations.embedding_model import require_current
from contextwm.conversations.engine import ContextEngine
from contextwm.retrieval.context_ranking import ALL_STATES, ContextRanker
from contextwm.retrieval.namespace_search import NamespaceSearchStore
from contextwm.retrieval.query import QueryReader
from contextwm.retrieval.ranker import Ranker
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


class Retriever:
    """Thread-safe: each call holds its conversation's lock only around the in-memory parts."""

    def __init__(self, engine: ContextEngine) -> None:
        # The engine is where the parts are built; retrieval keeps only those it uses.
        self.runtimes = engine.runtimes
        self.vectors = engine.vectors
        self.counters = engine.counters
        self.limits = engine.limits
        self.store: NamespaceSearchStore = engine.store
        ranker = Ranker(engine.store, engine.vectors, engine.embedder.model_name)
        self.ranking = ContextRanker(ranker)
        self.reader = QueryReader(engine.query_embedder, ranker)

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
        require_current([rt], self.ranking.model_name, request.mode)
        settings = rt.record.settings
        counter = self.counters(settings.encoding)
        asked = self.reader.read(
            rt,
            request.query,
            as_of=request.as_of,
            time_hints=request.time_hints,
            look_up=(ALL_STATES, request.hits) if request.mode != "dense" else None,
        )
        with rt.lock:
            q = self.reader.focused(rt, asked)
            if request.recent_share is None:
                relevance = self.ranking.relevance(rt, q, request)
            else:
                focus = rt.window.focus_vector(settings.focus_items)
                window = self.ranking.window(rt, focus)
                candidates = self.ranking.history(rt, q, request, ALL_STATES)
            unindexed = rt.pending
            state = rt.state
        if request.recent_share is None:
            assembled = assemble_relevant(
                relevance.window,
                relevance.hits,
                query=q.text,
                budget=request.max_tokens,
                keep_newest=settings.recent_min_items,
                counter=counter,
            )
            assembled = dataclasses.replace(
                assembled,
                recent=relevance.finish(assembled.recent),
                history=relevance.finish(assembled.history),
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
            self.ranking.ranker,
            self.reader,
            self.limits,
            namespace,
            request,
        )
