"""Hybrid search over one conversation's history or over every conversation of a namespace."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from contextwm.conversations.embedding_model import require_current
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.conversations.runtimes import Runtimes
from contextwm.conversations.validation import Limits, namespace_of
from contextwm.conversations.vectors import Vectors
from contextwm.domain import deadlines
from contextwm.domain.items import ItemState, ScoredItem
from contextwm.retrieval.query import QueryReader
from contextwm.retrieval.ranker import CANDIDATES, Ranker, Signals
from contextwm.retrieval.ranking import Ranked, admitted, fuse, with_context
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
    """The request's top_k hits, best first, across the conversations it names, ranked on
    one scale.

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
    found: list[_Found] = []
    for n, rt in enumerate(searched, start=1):
        deadlines.check(f"searching conversation {n} of {len(searched)}")
        vectors.wait_indexed(rt)
        hint = reader.hint(rt, query, request.as_of) if request.time_hints else None
        first_hint = first_hint or hint
        text = strip_time_phrase(query, hint) if hint else query
        if text not in query_vec_cache:
            query_vec_cache[text] = reader.embed(text)
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
    """Each conversation's candidates, fused together: similarity and BM25 are mapped onto
    0..1 by the best of every conversation searched, so that one conversation's best hit
    counts for no more than it is worth beside the others'."""
    dense: dict[int, float] = {}
    lexical: dict[int, float] = {}
    keep: set[int] = set()
    origin: list[tuple[int, int]] = []  # candidate id -> (index in found, seq)
    for i, f in enumerate(found):
        s = f.signals
        for seq in sorted(s.dense.keys() | s.lexical.keys()):
            # Each conversation's own similarity floor (in dense mode) applies to its items.
            sim, found_by_words = s.dense.get(seq, 0.0), s.lexical.get(seq, 0.0) > 0.0
            exempt = seq in s.in_range
            if not admitted(sim, found_by_words, mode=mode, threshold=f.threshold, exempt=exempt):
                continue
            cid = len(origin)
            origin.append((i, seq))
            if seq in s.dense:
                dense[cid] = s.dense[seq]
            if seq in s.lexical:
                lexical[cid] = s.lexical[seq]
            if exempt:
                keep.add(cid)
    fused = fuse(dense, lexical, population=sum(f.rt.total for f in found), mode=mode, keep=keep)
    per: list[list[Ranked]] = [[] for _ in found]
    for r in fused:
        i, seq = origin[r.seq]
        per[i].append(dataclasses.replace(r, seq=seq))
    return [
        (f, with_context(ranked) if mode == "hybrid" else ranked)
        for f, ranked in zip(found, per, strict=True)
    ]


def _scored(ranker: Ranker, f: _Found, ranked: Sequence[Ranked]) -> list[ScoredItem]:
    with f.rt.lock:
        if f.rt.deleted:
            return []
        return ranker.scored(f.rt, ranked, f.hint)
