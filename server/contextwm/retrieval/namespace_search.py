"""Search across every conversation of a namespace from namespace-wide lookups: one for the
query's words, one for its nearest vectors, then only the items they found are read. Its
cost follows how many items match, not how many conversations the namespace holds."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from contextwm.conversations.embedding_model import refuse_stale
from contextwm.conversations.runtimes import Runtimes
from contextwm.conversations.vectors import Vectors
from contextwm.domain import deadlines
from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.items import ItemFilter, ItemState, ScoredItem
from contextwm.ports.conversation_store import ConversationStore
from contextwm.ports.namespace_store import ItemKey, NamespaceStore, NearestVectors
from contextwm.ports.reembed_store import ReembedStore
from contextwm.retrieval.query import QueryReader
from contextwm.retrieval.query_terms import query_terms
from contextwm.retrieval.ranker import CANDIDATES, MAX_POSTINGS, Ranker, score_parts
from contextwm.retrieval.ranking import (
    CONTEXT_REACH,
    CONTEXT_SHARE,
    DENSE_FLOOR_RANK,
    PEAK_DEPTH,
    Ranked,
    bm25,
    fuse_across,
    matched_idf,
    with_context,
)
from contextwm.retrieval.requests import SearchOutcome, SearchRequest
from contextwm.window.scoring import Clock
from contextwm.window.window import Vector

# How much deeper each further read of the nearest vectors goes, when the store turned down
# too many of those read (window items when the window is not searched, removed items).
DEEPER = 4
# The most items a filter may admit to the dense search, as in one conversation's search.
MAX_FILTERED = 1_000_000


class NamespaceSearchStore(ConversationStore, NamespaceStore, ReembedStore, Protocol):
    """What a namespace's search reads: its conversations, whether their vectors are stale,
    and the namespace-wide lookups."""


def search_namespace(
    store: NamespaceSearchStore,
    runtimes: Runtimes,
    vectors: Vectors,
    nearest: NearestVectors,
    ranker: Ranker,
    reader: QueryReader,
    namespace: str,
    request: SearchRequest,
    states: Sequence[ItemState],
) -> SearchOutcome:
    """The request's top_k hits across the namespace, best first, ranked on one scale, for a
    query that names no time (time words are read on each conversation's clock: search.py
    searches each conversation for those).

    The namespace is searched as one collection: its max(CANDIDATES, top_k) best items by
    BM25 (on the namespace's statistics, by the rules of one conversation's search) and by
    similarity are fused as fuse_across fuses them; in hybrid mode the turns around a
    candidate strong enough to lift them into top_k by its context share join them. Only
    the returned items are read in full.

    Raises:
        FailedPrecondition: dense or hybrid mode over a namespace with conversations whose
            vectors come from another model.
    """
    names = dict(store.conversation_keys(namespace))
    if not names:
        return SearchOutcome((), None)
    mode, flt = request.mode, request.filter
    if mode != "lexical":
        refuse_stale(
            store.stale_conversations(ranker.model_name, namespace), ranker.model_name, mode
        )
    # Read-your-writes: items appended to this server are embedded before dense search.
    for rt in runtimes.loaded():
        if rt.pending and rt.record.namespace == namespace:
            vectors.wait_indexed(rt)
    deadlines.check("searching the namespace")
    text = request.query.strip()
    limit = max(CANDIDATES, request.top_k)
    lexical: dict[ItemKey, float] = {}
    if mode != "dense":
        words = _bm25(store, namespace, text, states, flt, limit)
        lexical = dict(sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))[:limit])
    dense: dict[ItemKey, float] = {}
    query_vec: Vector | None = None
    if mode != "lexical":
        query_vec = reader.embed(text)
        k = max(limit, DENSE_FLOOR_RANK)
        dense = _nearest(store, nearest, namespace, query_vec, k, states, flt)
    # The similarity of a candidate only words found lies below the DENSE_FLOOR_RANK-th, where
    # fusion counts none: it is measured for the returned items alone (unless a floor asks).
    if request.similarity_threshold is not None and query_vec is not None:
        unmeasured = [i for i in lexical if i not in dense]
        dense.update(_similarity(nearest, namespace, query_vec, unmeasured))
    candidates = dense.keys() | lexical.keys()
    population = len(candidates)
    if population < PEAK_DEPTH:  # only then does the namespace's size move fusion (peakedness)
        population = max(population, store.namespace_totals(namespace)[0])
    thresholds = _thresholds(store, ranker, {key for key, _ in candidates}, request)
    ranked = fuse_across(dense, lexical, population=population, mode=mode, thresholds=thresholds)
    if mode == "hybrid":
        _add_turns_around(store, nearest, namespace, query_vec, ranked, request, states)
        ranked = {key: with_context(rs) for key, rs in ranked.items()}
    best = sorted(
        ((key, r) for key, rs in ranked.items() for r in rs),
        key=lambda kr: (-kr[1].score, names.get(kr[0], ""), kr[1].seq),
    )[: request.top_k * 2]  # room for items gone since they were found
    hits = [s for s in _scored(store, nearest, namespace, query_vec, best) if flt.matches(s.item)]
    hits.sort(key=lambda s: (-s.score, s.item.conversation_id, s.item.seq))
    return SearchOutcome(tuple(hits[: request.top_k]), None)


def _add_turns_around(
    store: NamespaceStore,
    nearest: NearestVectors,
    namespace: str,
    query_vec: Vector | None,
    ranked: dict[int, list[Ranked]],
    request: SearchRequest,
    states: Sequence[ItemState],
) -> None:
    """Adds to ranked (fused, before context) the turns around the candidates whose context
    share could lift a turn that neither signal found into top_k: such a turn scores only
    that share (with_context), and context only raises the top_k-th score."""
    scores = sorted((r.score for rs in ranked.values() for r in rs), reverse=True)
    bar = scores[request.top_k - 1] if len(scores) >= request.top_k else 0.0
    known = {(key, r.seq) for key, rs in ranked.items() for r in rs}
    around = {
        (key, r.seq + d)
        for key, rs in ranked.items()
        for r in rs
        if CONTEXT_SHARE * r.score >= bar
        for d in range(-CONTEXT_REACH, CONTEXT_REACH + 1)
    } - known
    if not around:
        return
    turns = sorted(store.present_items(sorted(around), states, request.filter))
    floor = request.similarity_threshold
    if floor is not None and query_vec is not None:  # a turn found by neither must pass it
        sims = _similarity(nearest, namespace, query_vec, turns)
        turns = [t for t in turns if sims.get(t, -1.0) >= floor]
    for key, seq in turns:
        ranked.setdefault(key, []).append(Ranked(seq, 0.0, 0.0, 0.0, measured=False))


def _bm25(
    store: NamespaceStore,
    namespace: str,
    text: str,
    states: Sequence[ItemState],
    flt: ItemFilter,
    limit: int,
) -> dict[ItemKey, float]:
    """BM25 of the items holding the query's terms, with the namespace as the collection
    (its item count, mean length and counts of items per term), by the rules Ranker.bm25
    applies in one conversation: up to MAX_POSTINGS items listed per term, and without a
    filter only the 2 x limit items holding the most of the query's IDF scored."""
    terms = query_terms(text)
    if not terms:
        return {}
    postings = store.namespace_postings(namespace, terms, MAX_POSTINGS)
    total, tokens = store.namespace_totals(namespace)
    # A common term's count may include other namespaces' (see namespace_postings).
    postings = {t: dataclasses.replace(p, count=min(p.count, total)) for t, p in postings.items()}
    weights = matched_idf(postings, total)
    rows = sorted(weights, key=lambda r: -weights[r])
    if flt.empty:
        rows = rows[: 2 * limit]
    found = store.posting_rows(rows, states, flt)
    scores = bm25(
        weights, {row: (row, p.tokens) for row, p in found.items()}, tokens / max(total, 1)
    )
    return {(found[row].key, found[row].seq): score for row, score in scores.items()}


def _nearest(
    store: NamespaceStore,
    nearest: NearestVectors,
    namespace: str,
    query_vec: Vector,
    k: int,
    states: Sequence[ItemState],
    flt: ItemFilter,
) -> dict[ItemKey, float]:
    """The k items in these states matching flt most similar to the query, by similarity."""
    if not flt.empty:
        allowed = store.namespace_filtered(namespace, flt, states, MAX_FILTERED)
        return dict(nearest.nearest(namespace, query_vec, k, allowed))
    depth = k
    while True:
        found = nearest.nearest(namespace, query_vec, depth)
        present = store.present_items([i for i, _ in found], states)
        kept = [(i, sim) for i, sim in found if i in present]
        if len(kept) >= k or len(found) < depth:  # enough, or every vector read
            return dict(kept[:k])
        depth *= DEEPER


def _similarity(
    nearest: NearestVectors, namespace: str, query_vec: Vector, items: Sequence[ItemKey]
) -> dict[ItemKey, float]:
    """Similarity to the query of those of these items that have a vector."""
    if not items:
        return {}
    found = nearest.vectors(namespace, items)
    if not found:
        return {}
    keys = list(found)
    sims = np.stack([found[i] for i in keys]) @ query_vec
    return dict(zip(keys, sims.tolist(), strict=True))


def _thresholds(
    store: ConversationStore, ranker: Ranker, keys: set[int], request: SearchRequest
) -> dict[int, float | None]:
    """Each conversation's similarity floor (see Ranker.threshold): the request's, else in
    dense mode the conversation's own setting."""
    if request.similarity_threshold is not None or request.mode != "dense":
        return dict.fromkeys(keys, request.similarity_threshold)
    out: dict[int, float | None] = {}
    for key in keys:
        record = store.conversation_record(key)
        if record is not None:
            out[key] = record.settings.similarity_threshold
    return out


def _scored(
    store: NamespaceSearchStore,
    nearest: NearestVectors,
    namespace: str,
    query_vec: Vector | None,
    best: Sequence[tuple[int, Ranked]],
) -> list[ScoredItem]:
    """The ranked candidates as scored items, with every part of their score (the similarity
    ranking left unmeasured included), read from the store: a conversation deleted meanwhile
    has none. With no time named, an item's score is its fused score (see Ranker.scored)."""
    items = store.namespace_items([(key, r.seq) for key, r in best])
    sims: dict[ItemKey, float] = {}
    if query_vec is not None:
        unmeasured = [(key, r.seq) for key, r in best if not r.measured]
        sims = _similarity(nearest, namespace, query_vec, unmeasured)
    scoring: dict[int, tuple[ConversationSettings, Clock] | None] = {}
    out: list[ScoredItem] = []
    for key, r in best:
        item = items.get((key, r.seq))
        if item is None:
            continue
        if key not in scoring:
            record = store.conversation_record(key)
            newest = store.clock_bounds(key)[1]
            scoring[key] = (
                None
                if record is None
                else (record.settings, Clock(now=newest or 0.0, last_seq=record.last_seq))
            )
        found = scoring[key]
        if found is None:
            continue
        if (key, r.seq) in sims:
            r = r._replace(similarity=sims[(key, r.seq)])
        parts = score_parts(*found, item, None, similarity=r.similarity, lexical=r.lexical)
        out.append(ScoredItem(item, r.score, parts))
    return out
