"""Hybrid search over one conversation's history or over every conversation of a namespace."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextwm.conversations.embedding_model import require_current
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.conversations.runtimes import Runtimes
from contextwm.conversations.validation import Limits, namespace_of
from contextwm.conversations.vectors import Vectors
from contextwm.domain import deadlines
from contextwm.domain.items import ItemState, ScoredItem
from contextwm.retrieval.namespace_search import NamespaceSearchStore, search_namespace
from contextwm.retrieval.query import QueryReader
from contextwm.retrieval.ranker import CANDIDATES, Ranker, Signals
from contextwm.retrieval.ranking import Ranked, fuse_across, with_context
from contextwm.retrieval.requests import SearchOutcome, SearchRequest, check_search_request
from contextwm.retrieval.timehints import TimeHint, names_time
from contextwm.window.window import Vector


def search(
    store: NamespaceSearchStore,
    runtimes: Runtimes,
    vectors: Vectors,
    ranker: Ranker,
    reader: QueryReader,
    limits: Limits,
    namespace: str,
    request: SearchRequest,
) -> SearchOutcome:
    """The request's top_k hits, best first, across the conversations it names, ranked on
    one scale.

    Raises:
        InvalidArgument: bad options. NotFound: a named conversation that does not exist.
        FailedPrecondition: dense or hybrid mode over a conversation whose vectors come from
            another model (all of them are checked before any is searched).
    """
    ns = namespace_of(namespace)
    check_search_request(request, limits)
    states = (
        (ItemState.ARCHIVED, ItemState.COMPACTED, ItemState.WINDOW)
        if request.include_window
        else (ItemState.ARCHIVED, ItemState.COMPACTED)
    )
    query = request.query.strip()
    if request.conversation_id:
        searched = [runtimes.get(ns, request.conversation_id)]
    elif not (request.time_hints and names_time(query)):
        return search_namespace(
            store, runtimes, vectors, vectors.namespaces, ranker, reader, ns, request, states
        )
    else:  # time words read on each conversation's own clock: each is searched
        searched = [runtimes.get(ns, cid) for _, cid in store.conversation_keys(ns)]
    require_current(searched, ranker.model_name, request.mode)
    first_hint: TimeHint | None = None
    query_vec_cache: dict[str, Vector] = {}
    found: list[_Found] = []
    for n, rt in enumerate(searched, start=1):
        deadlines.check(f"searching conversation {n} of {len(searched)}")
        hint, text = reader.timed(rt, query, request.as_of) if request.time_hints else (None, query)
        first_hint = first_hint or hint
        if text in query_vec_cache:
            vectors.wait_indexed(rt)
        else:
            query_vec_cache[text] = reader.vector(rt, text)
        with rt.lock:
            if rt.deleted:
                continue
            signals = ranker.signals(
                rt,
                query_vec_cache[text],
                text,
                states=states,
                mode=request.mode,
                hint=hint,
                flt=request.filter,
                limit=max(CANDIDATES, request.top_k),
            )
        threshold = ranker.threshold(rt, request.similarity_threshold, request.mode)
        found.append(_Found(rt, hint, signals, threshold))
    hits = [
        s
        for f, ranked in _on_one_scale(found, request.mode)
        for s in _scored(ranker, f, ranked[: request.top_k * 2])
        if request.filter.matches(s.item)
    ]
    hits.sort(key=lambda s: (-s.score, s.item.conversation_id, s.item.seq))
    return SearchOutcome(tuple(hits[: request.top_k]), first_hint)


@dataclass(frozen=True, slots=True)
class _Found:
    """One conversation's candidates for the query."""

    rt: ConversationRuntime
    hint: TimeHint | None
    signals: Signals
    threshold: float | None


def _on_one_scale(found: Sequence[_Found], mode: str) -> list[tuple[_Found, list[Ranked]]]:
    """Each conversation's candidates, fused together on one scale (see fuse_across)."""
    ranked = fuse_across(
        {(f.rt.key, seq): sim for f in found for seq, sim in f.signals.dense.items()},
        {(f.rt.key, seq): bm for f in found for seq, bm in f.signals.lexical.items()},
        population=sum(f.rt.total for f in found),
        mode=mode,
        thresholds={f.rt.key: f.threshold for f in found},
        keep={(f.rt.key, seq) for f in found for seq in f.signals.in_range},
    )
    if mode == "hybrid":
        ranked = {key: with_context(rs) for key, rs in ranked.items()}
    return [(f, ranked.get(f.rt.key, [])) for f in found]


def _scored(ranker: Ranker, f: _Found, ranked: Sequence[Ranked]) -> list[ScoredItem]:
    with f.rt.lock:
        if f.rt.deleted:
            return []
        return ranker.scored(f.rt, ranked, f.hint)
