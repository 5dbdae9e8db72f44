"""Hybrid search over one conversation's history or over every conversation of a namespace."""

from __future__ import annotations

from contextwm.conversations.embedding_model import require_current
from contextwm.conversations.runtimes import Runtimes
from contextwm.conversations.validation import Limits, namespace_of
from contextwm.conversations.vectors import Vectors
from contextwm.domain import deadlines
from contextwm.domain.items import ItemState, ScoredItem
from contextwm.retrieval.query import QueryReader
from contextwm.retrieval.ranker import CANDIDATES, Ranker
from contextwm.retrieval.requests import SearchOutcome, SearchRequest, check_search_request
from contextwm.retrieval.timehints import TimeHint, strip_time_phrase
from contextwm.window.window import Vector


def search(
    runtimes: Runtimes,
    vectors: Vectors,
    ranker: Ranker,
    reader: QueryReader,
    limits: Limits,
    namespace: str,
    request: SearchRequest,
) -> SearchOutcome:
    """The request's top_k hits, best first, across the conversations it names.

    Raises:
        InvalidArgument: bad options. NotFound: a named conversation that does not exist.
        FailedPrecondition: dense or hybrid mode over a conversation whose vectors come from
            another model (all of them are checked before any is searched).
    """
    ns = namespace_of(namespace)
    check_search_request(request, limits)
    if request.conversation_id:
        searched = [runtimes.get(ns, request.conversation_id)]
    else:
        searched = [runtimes.get(ns, cid) for _, cid in runtimes.store.conversation_keys(ns)]
    require_current(searched, ranker.model_name, request.mode)
    states = (
        (ItemState.ARCHIVED, ItemState.COMPACTED, ItemState.WINDOW)
        if request.include_window
        else (ItemState.ARCHIVED, ItemState.COMPACTED)
    )
    query = request.query.strip()
    first_hint: TimeHint | None = None
    query_vec_cache: dict[str, Vector] = {}
    hits: list[ScoredItem] = []
    for n, rt in enumerate(searched, start=1):
        deadlines.check(f"searching conversation {n} of {len(searched)}")
        vectors.wait_indexed(rt)
        hint = reader.hint(rt, query, request.as_of)
        first_hint = first_hint or hint
        text = strip_time_phrase(query, hint) if hint else query
        if text not in query_vec_cache:
            query_vec_cache[text] = reader.embed(text)
        with rt.lock:
            if rt.deleted:
                continue
            ranked = ranker.rank(
                rt,
                query_vec_cache[text],
                text,
                states=states,
                threshold=ranker.threshold(rt, request.similarity_threshold, request.mode),
                mode=request.mode,
                hint=hint,
                flt=request.filter,
                limit=max(CANDIDATES, request.top_k),
            )
            scored = ranker.scored(rt, ranked[: request.top_k * 2], hint)
        hits.extend(s for s in scored if request.filter.matches(s.item))
    hits.sort(key=lambda s: (-s.score, s.item.conversation_id, s.item.seq))
    return SearchOutcome(tuple(hits[: request.top_k]), first_hint)
