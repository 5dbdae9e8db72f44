"""Ranks a conversation's items for a query: BM25 and dense similarity fused, time words
applied, each result with the parts of its score."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime
from typing import Protocol

import numpy as np

from contextwm.conversations.runtime import ConversationRuntime
from contextwm.conversations.vectors import Vectors
from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.items import Item, ItemFilter, ItemState, ScoredItem, ScoreParts
from contextwm.ports.item_store import ItemStore
from contextwm.ports.lexical_store import LexicalStore, TermPostings
from contextwm.ports.vector_store import VectorStore
from contextwm.retrieval.feedback import (
    FEEDBACK_HITS,
    candidate_terms,
    feedback_terms,
    widened,
)
from contextwm.retrieval.query_terms import query_terms
from contextwm.retrieval.ranking import (
    DENSE_FLOOR_RANK,
    Ranked,
    bm25,
    fuse,
    matched_idf,
)
from contextwm.retrieval.timehints import TimeHint
from contextwm.window.scoring import Clock, recency
from contextwm.window.window import Vector

# How many candidates each ranking contributes before fusion: enough that a hit ranked
# low by one signal but high by the other is still seen.
CANDIDATES = 100
# Items in a named time range found by timestamp alone when the text finds too few.
TIME_CANDIDATES = 200
# Items listed per query term (the oldest): a term in more items than this is common and
# weighs little (low IDF), and listing it all would cost the most.
MAX_POSTINGS = 100
# A term's postings are kept for the next queries, for up to this many terms. A common
# term's are reused until the conversation has grown by COUNT_DRIFT since (its IDF then moves
# by less than that share; newer items are not among its first rows anyway); a rarer term's
# until the conversation has a new item.
COUNT_DRIFT = 0.05
MAX_CACHED_TERMS = 4096
# How much the time a query names moves an item inside it (fit 1) up: its fused score
# (0..1) is multiplied by 1 + TIME_BOOST, so the time words favour relevant items of that
# time over relevant items of another, and TIME_FLOOR is added, so that an item of that
# time comes back when the words find nothing ("what did we discuss last week?").
TIME_BOOST = 0.5
TIME_FLOOR = 0.05


@dataclasses.dataclass(frozen=True, slots=True)
class Signals:
    """What ranks a conversation's candidates, before fusion."""

    dense: dict[int, float]  # seq -> cosine similarity to the query
    lexical: dict[int, float]  # seq -> BM25
    in_range: set[int]  # items inside the time range the query names


class RankerStore(ItemStore, LexicalStore, VectorStore, Protocol):
    """What ranking reads: filtered and stored items, term postings and stored vectors."""


class Ranker:
    """Ranking over conversation runtimes and the store. Methods that read the runtime's
    window or index say so: their caller holds rt.lock."""

    def __init__(self, store: RankerStore, vectors: Vectors, model_name: str) -> None:
        self.store = store
        self.indexes = vectors
        self.model_name = model_name

    @staticmethod
    def rank(
        rt: ConversationRuntime,
        found: Signals,
        *,
        threshold: float | None,
        mode: str,
        limit: int | None = None,
    ) -> list[Ranked]:
        """A conversation's best `limit` candidates (from signals; all when None) fused, best
        first, in hybrid mode rescored with the turns around them."""
        return fuse(
            found.dense,
            found.lexical,
            population=rt.total,
            threshold=threshold,
            mode=mode,
            keep=found.in_range,
            in_context=mode == "hybrid",
            limit=limit,
        )

    def signals(
        self,
        rt: ConversationRuntime,
        query_vec: Vector | None,
        text: str,
        *,
        states: Sequence[ItemState],
        mode: str,
        hint: TimeHint | None,
        flt: ItemFilter | None,
        limit: int,
        measure_all: bool = True,
        lexical: dict[int, float] | None = None,
    ) -> Signals:
        """Dense and lexical candidates from the archive (and window, if in states), with
        their similarity and BM25 before fusion (rt.lock held).

        measure_all=False leaves the similarity of archived items that only words or time
        found unmeasured in hybrid mode: they lie below the DENSE_FLOOR_RANK-th similarity,
        where fusion counts none, so only reporting needs it (see finish). lexical: the
        BM25 of text over these states and flt, when already looked up.
        """
        allowed: np.ndarray | None = None
        if flt is not None and not flt.empty:
            allowed = self.store.filtered_seqs(rt.key, flt, states, 1_000_000)
        if lexical is None:
            lexical = self.bm25(rt, text, states, flt, limit) if mode != "dense" else {}
        if len(lexical) > limit:  # a long query lists many items; only the best can rank
            lexical = dict(sorted(lexical.items(), key=lambda kv: -kv[1])[:limit])
        in_range_seqs: set[int] = set()
        if hint is not None and (hint.since is not None or hint.until is not None):
            in_range = ItemFilter(since=_ts(hint.since), until=_ts(hint.until))
            if flt is not None:
                in_range = dataclasses.replace(flt, since=in_range.since, until=in_range.until)
            in_range_seqs = set(
                self.store.filtered_seqs(rt.key, in_range, states, TIME_CANDIDATES).tolist()
            )

        dense: dict[int, float] = {}
        if query_vec is not None and mode != "lexical":
            if ItemState.ARCHIVED in states:  # the index holds archived and compacted items
                self.indexes.ensure_index(rt)
                assert rt.index is not None
                # At least DENSE_FLOOR_RANK deep: fusion reads similarity from that rank up.
                k = max(limit, DENSE_FLOOR_RANK)
                sims, ids = rt.index.search(query_vec, k, allowed)
                rt.last_search = time.monotonic()
                dense.update(zip(ids.tolist(), sims.tolist(), strict=True))
            known: dict[int, Vector] = {}
            if ItemState.WINDOW in states:
                allowed_set = set(allowed.tolist()) if allowed is not None else None
                known = {
                    e.item.seq: e.vector
                    for e in rt.window
                    if e.vector is not None and (allowed_set is None or e.item.seq in allowed_set)
                }
            if measure_all or mode != "hybrid":
                # Candidates found by words or time alone: their similarity counts too.
                found = lexical.keys() | in_range_seqs
                known.update(self.vectors(rt, [s for s in found if s not in dense]))
            if known:
                seqs = list(known)
                sims = np.stack([known[s] for s in seqs]) @ query_vec
                dense.update(zip(seqs, sims.tolist(), strict=True))
        return Signals(dense, lexical, in_range_seqs)

    def bm25(
        self,
        rt: ConversationRuntime,
        text: str,
        states: Sequence[ItemState],
        flt: ItemFilter | None,
        limit: int,
    ) -> dict[int, float]:
        """BM25 of the items (in these states, matching flt) that contain the query's terms:
        without a filter, of the 2 x limit items holding the most of their IDF.

        Safe without rt.lock: the store has a connection per thread, and what it adds to
        the postings cache is dated by figures read under the lock (see _postings)."""
        terms = query_terms(text)
        if not terms:
            return {}
        return self._bm25(rt, self._postings(rt, terms, as_of=_settled(rt)), states, flt, limit)

    def _postings(
        self, rt: ConversationRuntime, terms: Sequence[str], *, as_of: tuple[int, int] | None
    ) -> dict[str, TermPostings]:
        """Each term's postings, from the runtime's cache while they are current (see
        MAX_CACHED_TERMS), the rest read from the store and cached as of `as_of`.

        as_of: the conversation's (total, last_seq) read under rt.lock no later than the
        store is read (None: cache nothing). An append counts its item in rt.last_seq before
        its commit, under rt.lock, so a read beside it would be cached as current without
        the item; read before it, the figures make a read that saw it look stale."""
        cached = rt.term_postings
        out: dict[str, TermPostings] = {}
        missing: list[str] = []
        for t in terms:
            entry = cached.pop(t, None)
            if entry is not None and _current(rt, *entry):
                out[t] = entry[0]
                cached[t] = entry  # last in the dict's order: the last to go
            else:
                missing.append(t)
        if missing:
            read = self.store.term_postings(rt.key, missing, MAX_POSTINGS)
            if as_of is not None:
                for t, postings in read.items():
                    cached[t] = (postings, *as_of)
                # The least recently used go. list() copies the keys in one step under the
                # GIL, so a query beside this one cannot change the dict while it is read.
                for t in list(cached)[: max(0, len(cached) - MAX_CACHED_TERMS)]:
                    cached.pop(t, None)
            out.update(read)
        return out

    def _bm25(
        self,
        rt: ConversationRuntime,
        postings: Mapping[str, TermPostings],
        states: Sequence[ItemState],
        flt: ItemFilter | None,
        limit: int,
        boost: Mapping[str, float] | None = None,
    ) -> dict[int, float]:
        weights = matched_idf(postings, rt.total, boost)
        rows: Sequence[int] = list(weights)
        if (flt is None or flt.empty) and len(rows) > 2 * limit:
            # Length moves a score by a factor of about 2 at most: the items holding the
            # most of the query's weight are all that can rank.
            summed = np.fromiter(weights.values(), dtype=np.float64, count=len(rows))
            best = np.argsort(-summed, kind="stable")[: 2 * limit]
            rows = np.asarray(rows, dtype=np.int64)[best].tolist()
        items = self.store.row_items(rt.key, rows, states, flt)
        return bm25(weights, items, rt.tokens / max(rt.total, 1))

    def with_feedback(
        self,
        rt: ConversationRuntime,
        found: Signals,
        ranked: list[Ranked],
        text: str,
        *,
        states: Sequence[ItemState],
        limit: int,
        threshold: float | None,
    ) -> list[Ranked]:
        """A hybrid ranking again, its lexical side widened by the rare words of its best
        hits (see retrieval.feedback); unchanged when words found nothing (rt.lock held)."""
        if not found.lexical or not ranked:
            return ranked
        best = ranked[:FEEDBACK_HITS]
        hits = self.items(rt, [r.seq for r in best])
        top = best[0].score or 1.0
        held = candidate_terms(
            [(hits[r.seq].content, r.score / top) for r in best if r.seq in hits],
            set(query_terms(text)),
        )
        if not held:
            return ranked
        postings = self._postings(rt, list(held), as_of=(rt.total, rt.last_seq))
        chosen = feedback_terms(held, {t: p.count for t, p in postings.items()}, rt.total)
        if not chosen:
            return ranked
        boost = {t: held[t] for t in chosen}
        extra = self._bm25(rt, {t: postings[t] for t in chosen}, states, None, limit, boost)
        signals = dataclasses.replace(found, lexical=widened(found.lexical, extra))
        return self.rank(rt, signals, threshold=threshold, mode="hybrid", limit=limit)

    @staticmethod
    def threshold(rt: ConversationRuntime, asked: float | None, mode: str) -> float | None:
        """The similarity floor of candidates without lexical evidence: the request's, else
        in dense mode the conversation's. Hybrid ranking needs none: a weak similarity
        normalises to a weak score, and a floor would drop paraphrases BM25 cannot see."""
        if asked is not None:
            return asked
        return rt.record.settings.similarity_threshold if mode == "dense" else None

    def scored(
        self,
        rt: ConversationRuntime,
        ranked: Sequence[Ranked],
        hint: TimeHint | None,
        *,
        full_parts: bool = True,
    ) -> list[ScoredItem]:
        """Ranked candidates as scored items, best first; the time the query names moves hits
        up (rt.lock held).

        full_parts=False leaves recency, importance and role at 0 (the caller completes
        the parts of the items it returns: see finish).
        """
        items = self.items(rt, [r.seq for r in ranked])
        clock = rt.clock()
        settings = rt.record.settings
        out: list[ScoredItem] = []
        for r in ranked:
            item = items.get(r.seq)
            if item is None:
                continue
            if full_parts:
                parts = self.parts(rt, item, r, hint, clock)
            else:
                time_fit = 1.0 if hint is not None and in_range(hint, item.timestamp) else 0.0
                parts = ScoreParts(similarity=r.similarity, lexical=r.lexical, time=time_fit)
            fit = parts.time
            if hint is not None and hint.prefer_recent:
                fit += recency(settings, clock, item.timestamp, item.seq)
            if hint is not None and hint.prefer_oldest and rt.last_seq > 0:
                fit += 1.0 - item.seq / rt.last_seq
            score = r.score * (1.0 + TIME_BOOST * fit) + TIME_FLOOR * fit
            out.append(ScoredItem(item, score, parts))
        out.sort(key=lambda s: (-s.score, s.item.seq))
        return out

    @staticmethod
    def parts(
        rt: ConversationRuntime,
        item: Item,
        ranked: Ranked | None,
        hint: TimeHint | None,
        clock: Clock | None = None,
    ) -> ScoreParts:
        """Every part of an item's score (rt.lock held)."""
        return score_parts(
            rt.record.settings,
            clock or rt.clock(),
            item,
            hint,
            similarity=ranked.similarity if ranked else 0.0,
            lexical=ranked.lexical if ranked else 0.0,
        )

    def finish(
        self,
        rt: ConversationRuntime,
        items: tuple[ScoredItem, ...],
        query_vec: Vector | None,
        hint: TimeHint | None,
        unmeasured: AbstractSet[int],
        clock: Clock,
    ) -> tuple[ScoredItem, ...]:
        """The returned items with their score parts complete: recency, importance and role
        (left out while ranking, which needs none of them), and the similarity ranking left
        unmeasured, from stored vectors (which never change: no lock needed)."""
        settings = rt.record.settings
        vectors: dict[int, Vector] = {}
        if query_vec is not None:
            seqs = [s.item.seq for s in items if s.item.seq in unmeasured]
            if seqs:
                model = self.model_name
                vectors = self.store.vectors_for(rt.key, seqs, model)
        out: list[ScoredItem] = []
        for s in items:
            item = s.item
            similarity = s.parts.similarity
            if item.seq in vectors and query_vec is not None:
                similarity = float(np.dot(vectors[item.seq], query_vec))
            parts = score_parts(
                settings, clock, item, hint, similarity=similarity, lexical=s.parts.lexical
            )
            out.append(ScoredItem(item, s.score, parts, s.neighbor_of, s.replaced))
        return tuple(out)

    def items(self, rt: ConversationRuntime, seqs: Sequence[int]) -> dict[int, Item]:
        """Items by seq, from the window where possible, else from the store (rt.lock held)."""
        out: dict[int, Item] = {}
        missing: list[int] = []
        for seq in seqs:
            entry = rt.window.get(seq)
            if entry is not None:
                out[seq] = entry.item
            else:
                missing.append(seq)
        out.update(self.store.get_items(rt.key, missing))
        return out

    def vectors(self, rt: ConversationRuntime, seqs: Sequence[int]) -> dict[int, Vector]:
        """Stored vectors of these items, from the window where it has them (rt.lock held)."""
        out: dict[int, Vector] = {}
        from_store: list[int] = []
        for seq in seqs:
            entry = rt.window.get(seq)
            if entry is None:
                from_store.append(seq)
            elif entry.vector is not None:
                out[seq] = entry.vector
        out.update(self.store.vectors_for(rt.key, from_store, self.model_name))
        return out

    @staticmethod
    def scored_window(rt: ConversationRuntime, focus: Vector | None) -> list[ScoredItem]:
        """Every window item with its eviction score against focus (rt.lock held)."""
        scores = rt.window.scores(rt.record.settings, rt.clock(), focus)
        return [ScoredItem(e.item, *scores.at(i)) for i, e in enumerate(rt.window)]

    @staticmethod
    def shown(rt: ConversationRuntime, s: ScoredItem) -> ScoredItem:
        """A superseded file copy as its notice (the stored item is unchanged)."""
        r = rt.replaced.get(s.item.seq)
        if r is None:
            return s
        item = dataclasses.replace(s.item, content=r.text, token_count=r.tokens)
        return dataclasses.replace(s, item=item, replaced=True)


def score_parts(
    settings: ConversationSettings,
    clock: Clock,
    item: Item,
    hint: TimeHint | None,
    *,
    similarity: float = 0.0,
    lexical: float = 0.0,
) -> ScoreParts:
    """Every part of an item's score, on its conversation's settings and clock, with the
    similarity and BM25 its ranking found (0 when it was not ranked)."""
    return ScoreParts(
        recency=recency(settings, clock, item.timestamp, item.seq),
        importance=settings.weights.importance_of(item.flags),
        similarity=similarity,
        lexical=lexical,
        role=settings.weights.role.get(item.role, 0.0),
        time=1.0 if hint is not None and in_range(hint, item.timestamp) else 0.0,
    )


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def in_range(hint: TimeHint, timestamp: float) -> bool:
    """Whether a timestamp falls in the range a hint names (False for a hint without one)."""
    since, until = _ts(hint.since), _ts(hint.until)
    if since is None and until is None:
        return False
    return (since is None or timestamp >= since) and (until is None or timestamp < until)


def _settled(rt: ConversationRuntime) -> tuple[int, int] | None:
    """The conversation's (total, last_seq), or None while another thread changes it."""
    if not rt.lock.acquire(blocking=False):
        return None
    try:
        return rt.total, rt.last_seq
    finally:
        rt.lock.release()


def _current(rt: ConversationRuntime, postings: TermPostings, total: int, last_seq: int) -> bool:
    """Whether postings read when the conversation had total items up to last_seq still hold."""
    if postings.count > MAX_POSTINGS:
        return abs(rt.total - total) <= rt.total * COUNT_DRIFT
    return rt.last_seq == last_seq
