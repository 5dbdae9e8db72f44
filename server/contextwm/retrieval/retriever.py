"""Retrieval: the enhanced context (recent window plus relevant history under a budget) and
hybrid search, over the engine's conversation runtimes."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from contextwm.budgets.assembly import (
    AllocationReport,
    assemble_by_category,
    retrieval_line_cost,
    retrieval_text,
)
from contextwm.budgets.contributors import (
    MAX_WORKING_FILES,
    Contribution,
    PieceCache,
    SalienceCache,
    WorkspaceContributors,
    share_caps,
)
from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.runtime import ConversationRuntime
from contextwm.conversations.validation import check_timestamp, namespace_of
from contextwm.domain.categories import (
    BudgetPatch,
    Category,
    ContributorType,
    patch_budgets,
    patch_contributor_weights,
)
from contextwm.domain.checks import check_range
from contextwm.domain.conversations import ConversationState
from contextwm.domain.errors import FailedPrecondition, InvalidArgument, NotFound
from contextwm.domain.items import Flag, Item, ItemFilter, ItemState, ScoredItem, ScoreParts
from contextwm.ports.tokens import TokenCounter
from contextwm.retrieval.assembly import HistoryCandidate, TokenAccount, assemble
from contextwm.retrieval.query_terms import query_terms
from contextwm.retrieval.ranking import DENSE_FLOOR_RANK, Ranked, bm25, fuse, matched_idf
from contextwm.retrieval.relevant_assembly import assemble_relevant
from contextwm.retrieval.timehints import TimeHint, parse_time_hint, strip_time_phrase
from contextwm.window.importance import is_question
from contextwm.window.scoring import Clock, recency
from contextwm.window.window import Vector

# Ranked items an enhanced context draws on unless the request says otherwise: as many as
# the budget could hold at HIT_TOKENS each, at least MIN_HITS. Items are taken by relevance
# per token, so a short answer ranked 80th by score can be worth more than the 20th: on
# LongMemEval 100 candidates beat 60 or 80 by 4 points at 1024 tokens.
HIT_TOKENS = 40
MIN_HITS = 100
# How many candidates each ranking contributes before fusion: enough that a hit ranked
# low by one signal but high by the other is still seen.
CANDIDATES = 100
# Items in a named time range found by timestamp alone when the text finds too few.
TIME_CANDIDATES = 200
# Items listed per query term (the oldest): a term in more items than this is common and
# weighs little (low IDF), and listing it all would cost the most.
MAX_POSTINGS = 100
# A common term's count is reused until the conversation has grown by this share since
# (its IDF then moves by less than that share), for up to this many terms.
COUNT_DRIFT = 0.05
MAX_COUNTED_TERMS = 4096
# How much the time a query names moves an item inside it (fit 1) up: its fused score
# (0..1) is multiplied by 1 + TIME_BOOST, so the time words favour relevant items of that
# time over relevant items of another, and TIME_FLOOR is added, so that an item of that
# time comes back when the words find nothing ("what did we discuss last week?").
TIME_BOOST = 0.5
TIME_FLOOR = 0.05
# A turn that asks or answers one of the NEIGHBOR_HITS best hits is a candidate with
# NEIGHBOR_SHARE of the hit's score: it is taken when it is short enough to be worth it (a
# one-line answer), not when it is long.
NEIGHBOR_SHARE = 0.5
NEIGHBOR_HITS = 30
# Threads that look up a query's words while the request's thread embeds it: the embedding
# releases the GIL, so the lookup (about 1 ms at 10k items) is mostly hidden behind it.
LEXICAL_THREADS = 4


@dataclass(frozen=True, slots=True)
class CategoryRequest:
    """Asks for a context assembled by category budgets, with contributors (issue 4).

    Budgets and weights patch the conversation's; files are working files the request names,
    offered ahead of those the conversation's items refer to.
    """

    budgets: Mapping[Category, BudgetPatch] = field(default_factory=dict)
    contributor_weights: Mapping[ContributorType, float] = field(default_factory=dict)
    files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ContextRequest:
    query: str | None
    max_tokens: int
    recent_share: float | None = None  # None: relevance decides; a share: the seed's split
    similarity_threshold: float | None = None
    max_history_items: int | None = None  # None: as many as the budget could hold
    include_neighbors: bool = True
    mode: str = "hybrid"
    time_hints: bool = True
    categories: CategoryRequest | None = None  # None: the recent/history split of seed 004
    as_of: float | None = None  # when the query is asked; None: the conversation's newest time


@dataclass(frozen=True, slots=True)
class EnhancedContext:
    recent: tuple[ScoredItem, ...]
    history: tuple[ScoredItem, ...]
    text: str
    query: str
    query_from_focus: bool
    tokens: TokenAccount
    time_hint: TimeHint | None
    unindexed_items: int
    state: ConversationState
    allocation: AllocationReport | None = None  # set when the request asked for categories


@dataclass(frozen=True, slots=True)
class _Query:
    text: str | None  # as the request gave it, stripped; None: the focus stands in
    hint: TimeHint | None
    search: str  # what is searched for: the query less its time phrase, or the focus text
    vector: Vector | None
    words: _Words | None = None  # looked up while the query was embedded


@dataclass(frozen=True, slots=True)
class _Words:
    """A query's words looked up in the store while the query was embedded (no lock held)."""

    scores: dict[int, float]  # BM25 by seq
    states: tuple[ItemState, ...]  # of the items looked in
    event: int  # the conversation's last event then: any change since makes them stale


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    conversation_id: str | None = None
    top_k: int = 10
    include_window: bool = False
    filter: ItemFilter = field(default_factory=ItemFilter)
    mode: str = "hybrid"
    similarity_threshold: float | None = None
    as_of: float | None = None  # when the query is asked; None: the conversation's newest time


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    hits: tuple[ScoredItem, ...]
    time_hint: TimeHint | None


class Retriever:
    """Thread-safe: each call holds its conversation's lock only around the in-memory parts."""

    def __init__(self, engine: ContextEngine) -> None:
        self.engine = engine
        self._salience = SalienceCache(engine.embedder)
        self._pieces = PieceCache(1024)
        self._lexical = ThreadPoolExecutor(LEXICAL_THREADS, thread_name_prefix="cwm-lexical")

    def _wait_indexed(self, rt: ConversationRuntime) -> None:
        """Read-your-writes for dense search: wait (bounded) until appended items are embedded."""
        if rt.pending == 0:
            return
        deadline = time.monotonic() + self.engine.index_wait_seconds
        with self.engine.vector_waiters.waiting(), rt.indexed:
            while rt.pending > 0 and not rt.deleted:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                rt.indexed.wait(left)

    def get_context(
        self, namespace: str, conversation_id: str, request: ContextRequest
    ) -> EnhancedContext:
        """The recent window plus relevant history under request.max_tokens.

        Raises:
            InvalidArgument: bad options, or a budget that cannot hold the query.
            NotFound: no such conversation.
        """
        check_range("max_tokens", request.max_tokens, 1, self.engine.limits.max_budget_tokens)
        if request.recent_share is not None:
            check_range("recent_share", request.recent_share, 0.0, 1.0)
        if request.max_history_items is not None:
            check_range(
                "max_history_items", request.max_history_items, 0, self.engine.limits.max_top_k
            )
        if request.similarity_threshold is not None:
            check_range("similarity_threshold", request.similarity_threshold, -1.0, 1.0)
        if request.as_of is not None:
            check_timestamp("as_of", request.as_of)
        rt = self.engine.runtime(namespace, conversation_id)
        if request.categories is not None:
            return self._by_category(rt, request, request.categories)
        self._wait_indexed(rt)
        settings = rt.record.settings
        counter = self.engine.counters(settings.encoding)
        states = (ItemState.ARCHIVED, ItemState.COMPACTED, ItemState.WINDOW)
        asked = self._query(rt, request, states)
        with rt.lock:
            q = self._focused(rt, asked)
            if request.recent_share is None:
                window, hits, unmeasured = self._relevant(rt, q, request, states)
                clock = rt.clock()
            else:
                focus = rt.window.focus_vector(settings.focus_items)
                window = [self._shown(rt, w) for w in self._scored_window(rt, focus)]
                candidates = [
                    HistoryCandidate(
                        self._shown(rt, c.hit), c.neighbor and self._shown(rt, c.neighbor)
                    )
                    for c in self._history(rt, q, request, states)
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
            assembled = dataclasses.replace(
                assembled,
                recent=self._finish(rt, assembled.recent, q, unmeasured, clock),
                history=self._finish(rt, assembled.history, q, unmeasured, clock),
            )
        else:
            assembled = assemble(
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

    def _relevant(
        self,
        rt: ConversationRuntime,
        q: _Query,
        request: ContextRequest,
        states: Sequence[ItemState],
    ) -> tuple[list[ScoredItem], list[ScoredItem], set[int]]:
        """(every window item scored for the query, ranked candidates with their neighbours,
        the candidates whose similarity is not measured yet) for the default context, which
        lets relevance share the budget (rt.lock held)."""
        ranked = self._ranked(rt, q, request, states, measure_all=False)
        hits = self._scored(rt, ranked[: self._hits(request)], q.hint, full_parts=False)
        if request.include_neighbors:
            hits = self._with_neighbors(rt, hits, q.hint)
        hits = [self._shown(rt, h) for h in hits]
        by_seq = {h.item.seq: h for h in hits}
        unranked = ScoreParts()
        window = [
            by_seq.get(e.item.seq) or self._shown(rt, ScoredItem(e.item, 0.0, unranked))
            for e in rt.window
        ]
        unmeasured = {r.seq for r in ranked if not r.measured}
        unmeasured.update(e.item.seq for e in rt.window if e.item.seq not in by_seq)
        return window, hits, unmeasured

    def _by_category(
        self, rt: ConversationRuntime, request: ContextRequest, asked: CategoryRequest
    ) -> EnhancedContext:
        """The context by category budgets: window items by category, contributors in CONTEXT."""
        settings = rt.record.settings
        budgets = patch_budgets(settings.category_budgets, asked.budgets)
        weights = patch_contributor_weights(settings.contributor_weights, asked.contributor_weights)
        workspace = self.engine.workspace_of(settings)
        if asked.files and workspace is None:
            raise FailedPrecondition(
                "the request names files but the conversation has no workspace: set its"
                " workspace_root or start the server with --workspace"
            )
        named = [workspace.relative(p) for p in asked.files] if workspace else []
        self._wait_indexed(rt)
        counter = self.engine.counters(settings.encoding)
        retrieves = weights[ContributorType.RETRIEVAL] > 0
        states = (ItemState.ARCHIVED, ItemState.COMPACTED)  # the window's items are DIALOG's
        asked_query = self._query(rt, request, states if retrieves else None)
        with rt.lock:
            q = self._focused(rt, asked_query)
            # Scored against the query, so the least relevant window items go first.
            window = [self._shown(rt, w) for w in self._scored_window(rt, q.vector)]
            candidates: list[HistoryCandidate] = []
            if retrieves:
                candidates = self._history(rt, q, request, states)
            paths = self.engine.store.file_paths(rt.key, MAX_WORKING_FILES)
            unindexed = rt.pending
            state = rt.state
        # File reads, git and embeddings run outside the conversation's lock.
        context_max = int(budgets[Category.CONTEXT].max_share * request.max_tokens)
        contributions = WorkspaceContributors(
            workspace, counter, weights, share_caps(weights, context_max), self._pieces
        ).gather([*named, *paths])
        offered = [c.text for c in contributions if not c.reason]
        salient = iter(self._salience.saliences(offered, q.vector))
        contributions = [
            c if c.reason else dataclasses.replace(c, salience=next(salient)) for c in contributions
        ]
        contributions += self._retrieval_pieces(
            rt, candidates, {w.item.seq for w in window}, weights, counter
        )
        assembled = assemble_by_category(
            window,
            contributions,
            query=q.text,
            budget=request.max_tokens,
            budgets=budgets,
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
            allocation=assembled.report,
        )

    def _query(
        self,
        rt: ConversationRuntime,
        request: ContextRequest,
        states: tuple[ItemState, ...] | None,
    ) -> _Query:
        """The request's query: its time phrase read, the rest embedded and, when states are
        given, its words looked up in items in those states at the same time (no lock held:
        the lookup reads the store, and the ranking takes the lock)."""
        text = (request.query or "").strip() or None
        hint = self._hint(rt, text, request.as_of) if (text and request.time_hints) else None
        search = strip_time_phrase(text, hint) if (text and hint) else text
        if not search:
            return _Query(text, hint, "", None)
        looking = None
        if states is not None and request.mode != "dense":
            looking = self._lexical.submit(self._words, rt, search, states, self._hits(request))
        vector = self._embed_query(search)
        return _Query(text, hint, search, vector, looking.result() if looking else None)

    def _words(
        self, rt: ConversationRuntime, text: str, states: tuple[ItemState, ...], limit: int
    ) -> _Words:
        event = rt.last_event
        return _Words(self._bm25(rt, text, states, None, limit), states, event)

    @staticmethod
    def _focused(rt: ConversationRuntime, q: _Query) -> _Query:
        """q, or the focus standing in when the request has no query (rt.lock held)."""
        if rt.deleted:
            raise NotFound(f"conversation {rt.record.conversation_id!r} was deleted")
        if q.words is not None and q.words.event != rt.last_event:
            q = dataclasses.replace(q, words=None)  # looked up before a change: look again
        if q.text is not None:
            return q
        n = rt.record.settings.focus_items
        text = "\n".join(e.item.content for e in rt.window.newest(n))
        return dataclasses.replace(q, search=text, vector=rt.window.focus_vector(n))

    def _history(
        self,
        rt: ConversationRuntime,
        q: _Query,
        request: ContextRequest,
        states: Sequence[ItemState],
    ) -> list[HistoryCandidate]:
        """History hits for the query with their neighbours, best first (rt.lock held)."""
        ranked = self._ranked(rt, q, request, states)
        return self._candidates(rt, ranked[: self._hits(request)], request, q.hint)

    def _ranked(
        self,
        rt: ConversationRuntime,
        q: _Query,
        request: ContextRequest,
        states: Sequence[ItemState],
        *,
        measure_all: bool = True,
    ) -> list[Ranked]:
        """The ranking a context request asks for (rt.lock held)."""
        return self._rank(
            rt,
            q.vector,
            q.search,
            states=states,
            threshold=self._threshold(rt, request.similarity_threshold, request.mode),
            mode=request.mode,
            hint=q.hint,
            flt=None,
            limit=self._hits(request),
            measure_all=measure_all,
            lexical=q.words.scores if q.words and q.words.states == tuple(states) else None,
        )

    def _retrieval_pieces(
        self,
        rt: ConversationRuntime,
        candidates: Sequence[HistoryCandidate],
        window: set[int],
        weights: Mapping[ContributorType, float],
        counter: TokenCounter,
    ) -> list[Contribution]:
        """Each archive hit with the turn that asks or answers it, as one piece; a turn the
        window holds stays there, and no turn appears in two pieces. Salience is the larger
        of the hit's similarity and its normalised BM25 (so exact names count too)."""
        pieces: list[Contribution] = []
        taken: set[int] = set(window)
        for cand in candidates:
            hit = self._shown(rt, cand.hit)
            if hit.item.seq in taken:
                continue
            items = [hit]
            n = cand.neighbor
            if n is not None and n.item.seq not in taken:
                items.append(self._shown(rt, n))
            taken.update(s.item.seq for s in items)
            pieces.append(
                Contribution(
                    ContributorType.RETRIEVAL,
                    f"#{hit.item.seq}",
                    retrieval_text(items),
                    sum(retrieval_line_cost(counter, s) for s in items),
                    weights[ContributorType.RETRIEVAL],
                    min(1.0, max(0.0, hit.parts.similarity, hit.parts.lexical)),
                    items=tuple(items),
                )
            )
        return pieces

    @staticmethod
    def _shown(rt: ConversationRuntime, s: ScoredItem) -> ScoredItem:
        """A superseded file copy as its notice (the stored item is unchanged)."""
        r = rt.replaced.get(s.item.seq)
        if r is None:
            return s
        item = dataclasses.replace(s.item, content=r.text, token_count=r.tokens)
        return dataclasses.replace(s, item=item, replaced=True)

    def _embed_query(self, text: str) -> Vector:
        vector: Vector = self.engine.embedder.embed([text])[0]
        return vector

    def _hint(self, rt: ConversationRuntime, query: str, as_of: float | None) -> TimeHint | None:
        """The time the query names, read against as_of (when it is asked), else against the
        conversation's newest item: never the server's clock, so historic timelines work."""
        now = as_of if as_of is not None else rt.last_ts
        if now is None:
            return None

        def locate(event: str) -> datetime | None:
            """When the event happened: the item that matches its words best (BM25), the
            earliest on a tie (an event is usually named first when it happens)."""
            evidence = self._bm25(
                rt,
                event,
                (ItemState.WINDOW, ItemState.ARCHIVED, ItemState.COMPACTED),
                None,
                CANDIDATES,
            )
            if not evidence:
                return None
            seq = min(evidence, key=lambda s: (-round(evidence[s], 9), s))
            item = self._items(rt, [seq]).get(seq)
            return datetime.fromtimestamp(item.timestamp, UTC) if item else None

        return parse_time_hint(
            query,
            datetime.fromtimestamp(now, UTC),
            locate_event=locate,
            first=datetime.fromtimestamp(rt.first_ts, UTC) if rt.first_ts is not None else None,
        )

    def _scored_window(self, rt: ConversationRuntime, focus: Vector | None) -> list[ScoredItem]:
        scores = rt.window.scores(rt.record.settings, rt.clock(), focus)
        return [ScoredItem(e.item, *scores.at(i)) for i, e in enumerate(rt.window)]

    def _rank(
        self,
        rt: ConversationRuntime,
        query_vec: Vector | None,
        text: str,
        *,
        states: Sequence[ItemState],
        threshold: float | None,
        mode: str,
        hint: TimeHint | None,
        flt: ItemFilter | None,
        limit: int,
        measure_all: bool = True,
        lexical: dict[int, float] | None = None,
    ) -> list[Ranked]:
        """Fused dense + lexical candidates from the archive (and window, if in states).

        measure_all=False leaves the similarity of archived items that only words or time
        found unmeasured in hybrid mode: they lie below the DENSE_FLOOR_RANK-th similarity,
        where fusion counts none, so only reporting needs it (see _finish). lexical: the
        BM25 of text over these states and flt, when already looked up.
        """
        allowed: np.ndarray | None = None
        if flt is not None and not flt.empty:
            allowed = self.engine.store.filtered_seqs(rt.key, flt, states, 1_000_000)
        if lexical is None:
            lexical = self._bm25(rt, text, states, flt, limit) if mode != "dense" else {}
        if len(lexical) > limit:  # a long query lists many items; only the best can rank
            lexical = dict(sorted(lexical.items(), key=lambda kv: -kv[1])[:limit])
        in_range_seqs: set[int] = set()
        if hint is not None and (hint.since is not None or hint.until is not None):
            in_range = ItemFilter(since=_ts(hint.since), until=_ts(hint.until))
            if flt is not None:
                in_range = dataclasses.replace(flt, since=in_range.since, until=in_range.until)
            in_range_seqs = set(
                self.engine.store.filtered_seqs(rt.key, in_range, states, TIME_CANDIDATES).tolist()
            )

        dense: dict[int, float] = {}
        if query_vec is not None and mode != "lexical":
            if ItemState.ARCHIVED in states:  # the index holds archived and compacted items
                self.engine.ensure_index(rt)
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
                known.update(self._vectors(rt, [s for s in found if s not in dense]))
            if known:
                seqs = list(known)
                sims = np.stack([known[s] for s in seqs]) @ query_vec
                dense.update(zip(seqs, sims.tolist(), strict=True))
        return fuse(
            dense,
            lexical,
            population=rt.total,
            threshold=threshold,
            mode=mode,
            keep=in_range_seqs,
        )

    def _finish(
        self,
        rt: ConversationRuntime,
        items: tuple[ScoredItem, ...],
        q: _Query,
        unmeasured: AbstractSet[int],
        clock: Clock,
    ) -> tuple[ScoredItem, ...]:
        """The returned items with their score parts complete: recency, importance and role
        (left out while ranking, which needs none of them), and the similarity ranking left
        unmeasured, from stored vectors (which never change: no lock needed)."""
        settings = rt.record.settings
        vectors: dict[int, Vector] = {}
        if q.vector is not None:
            seqs = [s.item.seq for s in items if s.item.seq in unmeasured]
            if seqs:
                model = self.engine.embedder.model_name
                vectors = self.engine.store.vectors_for(rt.key, seqs, model)
        out: list[ScoredItem] = []
        for s in items:
            item = s.item
            similarity = s.parts.similarity
            if item.seq in vectors and q.vector is not None:
                similarity = float(np.dot(vectors[item.seq], q.vector))
            parts = dataclasses.replace(
                s.parts,
                similarity=similarity,
                recency=recency(settings, clock, item.timestamp, item.seq),
                importance=settings.weights.importance_of(item.flags),
                role=settings.weights.role.get(item.role, 0.0),
                time=1.0 if q.hint is not None and _in_range(q.hint, item.timestamp) else 0.0,
            )
            out.append(dataclasses.replace(s, parts=parts))
        return tuple(out)

    def _vectors(self, rt: ConversationRuntime, seqs: Sequence[int]) -> dict[int, Vector]:
        """Stored vectors of these items, from the window where it has them (rt.lock held)."""
        out: dict[int, Vector] = {}
        from_store: list[int] = []
        for seq in seqs:
            entry = rt.window.get(seq)
            if entry is None:
                from_store.append(seq)
            elif entry.vector is not None:
                out[seq] = entry.vector
        out.update(
            self.engine.store.vectors_for(rt.key, from_store, self.engine.embedder.model_name)
        )
        return out

    @staticmethod
    def _hits(request: ContextRequest) -> int:
        """How many ranked items the context draws on."""
        if request.max_history_items is not None:
            return request.max_history_items
        return max(MIN_HITS, request.max_tokens // HIT_TOKENS)

    @staticmethod
    def _threshold(rt: ConversationRuntime, asked: float | None, mode: str) -> float | None:
        """The similarity floor of candidates without lexical evidence: the request's, else
        in dense mode the conversation's. Hybrid ranking needs none: a weak similarity
        normalises to a weak score, and a floor would drop paraphrases BM25 cannot see."""
        if asked is not None:
            return asked
        return rt.record.settings.similarity_threshold if mode == "dense" else None

    def _bm25(
        self,
        rt: ConversationRuntime,
        text: str,
        states: Sequence[ItemState],
        flt: ItemFilter | None,
        limit: int,
    ) -> dict[int, float]:
        """BM25 of the items (in these states, matching flt) that contain the query's terms:
        without a filter, of the 2 x limit items holding the most of their IDF.

        Safe without rt.lock: the store has a connection per thread, and the term counts
        are a cache that another call may fill or clear meanwhile."""
        terms = query_terms(text)
        if not terms:
            return {}
        store = self.engine.store
        cached = rt.term_counts
        known: dict[str, int] = {}
        for t in terms:
            count = cached.get(t)
            if count is not None and rt.total - count[1] <= rt.total * COUNT_DRIFT:
                known[t] = count[0]
        postings = store.term_postings(rt.key, terms, MAX_POSTINGS, known)
        if len(cached) > MAX_COUNTED_TERMS:
            cached.clear()
        for t, p in postings.items():
            if p.count > MAX_POSTINGS and t not in known:
                cached[t] = (p.count, rt.total)
        weights = matched_idf(postings, rt.total)
        rows = sorted(weights, key=lambda r: -weights[r])
        if flt is None or flt.empty:
            # Length moves a score by a factor of about 2 at most: the items holding the
            # most of the query's weight are all that can rank.
            rows = rows[: 2 * limit]
        items = store.row_items(rt.key, rows, states, flt)
        return bm25(weights, items, rt.tokens / max(rt.total, 1))

    def _candidates(
        self,
        rt: ConversationRuntime,
        ranked: Sequence[Ranked],
        request: ContextRequest,
        hint: TimeHint | None,
    ) -> list[HistoryCandidate]:
        """Scored history hits with their neighbouring turns, best first (rt.lock held)."""
        hits = self._scored(rt, ranked, hint)
        if not request.include_neighbors:
            return [HistoryCandidate(h) for h in hits]
        partners = self._partners(rt, hits)
        by_seq = {h.item.seq: h for h in hits}
        out: list[HistoryCandidate] = []
        for h in hits:
            n = partners.get(h.item.seq)
            if n is None:
                out.append(HistoryCandidate(h))
                continue
            own = by_seq.get(n.seq)
            parts = own.parts if own is not None else self._parts(rt, n, None, hint)
            out.append(HistoryCandidate(h, ScoredItem(n, h.score, parts, h.item.seq)))
        return out

    def _with_neighbors(
        self, rt: ConversationRuntime, hits: list[ScoredItem], hint: TimeHint | None
    ) -> list[ScoredItem]:
        """The hits and, as candidates of their own, the turns that ask or answer them, each
        with NEIGHBOR_SHARE of its hit's score unless it scores higher itself (rt.lock held)."""
        by_seq = {h.item.seq: h for h in hits}
        # A weak hit's neighbour would inherit too little to be chosen: not worth a lookup.
        partners = self._partners(rt, hits[:NEIGHBOR_HITS])
        for h in hits:
            n = partners.get(h.item.seq)
            if n is None:
                continue
            score = NEIGHBOR_SHARE * h.score
            own = by_seq.get(n.seq)
            if own is None or own.score < score:
                parts = own.parts if own is not None else self._parts(rt, n, None, hint)
                by_seq[n.seq] = ScoredItem(n, score, parts, h.item.seq)
        return sorted(by_seq.values(), key=lambda s: (-s.score, s.item.seq))

    def _partners(self, rt: ConversationRuntime, hits: Sequence[ScoredItem]) -> dict[int, Item]:
        """Each hit's neighbouring turn, by the hit's seq (rt.lock held).

        Only a question and its answer travel together: a user question brings the assistant
        turn after it, an assistant turn the user question before it. A statement's neighbour
        is usually an acknowledgement, and the budget is better spent on another hit.
        """
        wanted: dict[int, tuple[Item, int]] = {}
        for h in hits:
            if h.item.role == "user" and _asks(h.item):
                wanted[h.item.seq] = (h.item, h.item.seq + 1)
            elif h.item.role == "assistant":
                wanted[h.item.seq] = (h.item, h.item.seq - 1)
        found = self._items(rt, list({n for _, n in wanted.values()}))
        out: dict[int, Item] = {}
        for seq, (hit, n_seq) in wanted.items():
            n = found.get(n_seq)
            if n is None or {n.role, hit.role} != {"user", "assistant"}:
                continue
            if n.role == "assistant" or _asks(n):
                out[seq] = n
        return out

    def _items(self, rt: ConversationRuntime, seqs: Sequence[int]) -> dict[int, Item]:
        """Items by seq, from the window where possible, else from the store (rt.lock held)."""
        out: dict[int, Item] = {}
        missing: list[int] = []
        for seq in seqs:
            entry = rt.window.get(seq)
            if entry is not None:
                out[seq] = entry.item
            else:
                missing.append(seq)
        out.update(self.engine.store.get_items(rt.key, missing))
        return out

    def _parts(
        self,
        rt: ConversationRuntime,
        item: Item,
        ranked: Ranked | None,
        hint: TimeHint | None,
        clock: Clock | None = None,
    ) -> ScoreParts:
        settings = rt.record.settings
        return ScoreParts(
            recency=recency(settings, clock or rt.clock(), item.timestamp, item.seq),
            importance=settings.weights.importance_of(item.flags),
            similarity=ranked.similarity if ranked else 0.0,
            lexical=ranked.lexical if ranked else 0.0,
            role=settings.weights.role.get(item.role, 0.0),
            time=1.0 if hint is not None and _in_range(hint, item.timestamp) else 0.0,
        )

    def _scored(
        self,
        rt: ConversationRuntime,
        ranked: Sequence[Ranked],
        hint: TimeHint | None,
        *,
        full_parts: bool = True,
    ) -> list[ScoredItem]:
        """Ranked candidates as scored items; the time the query names moves hits up.

        full_parts=False leaves recency, importance and role at 0 (the caller completes
        the parts of the items it returns: see _finish).
        """
        items = self._items(rt, [r.seq for r in ranked])
        clock = rt.clock()
        settings = rt.record.settings
        out: list[ScoredItem] = []
        for r in ranked:
            item = items.get(r.seq)
            if item is None:
                continue
            if full_parts:
                parts = self._parts(rt, item, r, hint, clock)
            else:
                time_fit = 1.0 if hint is not None and _in_range(hint, item.timestamp) else 0.0
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

    def search(self, namespace: str, request: SearchRequest) -> SearchOutcome:
        """Hybrid search over one conversation or every conversation of a namespace.

        Raises:
            InvalidArgument: bad options. NotFound: a named conversation that does not exist.
        """
        ns = namespace_of(namespace)
        check_range("top_k", request.top_k, 1, self.engine.limits.max_top_k)
        if not request.query.strip():
            raise InvalidArgument("query is empty")
        if request.as_of is not None:
            check_timestamp("as_of", request.as_of)
        if request.conversation_id:
            runtimes = [self.engine.runtime(ns, request.conversation_id)]
        else:
            runtimes = [
                self.engine.runtime(ns, cid) for _, cid in self.engine.store.conversation_keys(ns)
            ]
        states = (
            (ItemState.ARCHIVED, ItemState.COMPACTED, ItemState.WINDOW)
            if request.include_window
            else (ItemState.ARCHIVED, ItemState.COMPACTED)
        )
        query = request.query.strip()
        first_hint: TimeHint | None = None
        query_vec_cache: dict[str, Vector] = {}
        hits: list[ScoredItem] = []
        for rt in runtimes:
            self._wait_indexed(rt)
            hint = self._hint(rt, query, request.as_of)
            first_hint = first_hint or hint
            text = strip_time_phrase(query, hint) if hint else query
            if text not in query_vec_cache:
                query_vec_cache[text] = self._embed_query(text)
            with rt.lock:
                if rt.deleted:
                    continue
                threshold = self._threshold(rt, request.similarity_threshold, request.mode)
                ranked = self._rank(
                    rt,
                    query_vec_cache[text],
                    text,
                    states=states,
                    threshold=threshold,
                    mode=request.mode,
                    hint=hint,
                    flt=request.filter,
                    limit=max(CANDIDATES, request.top_k),
                )
                scored = self._scored(rt, ranked[: request.top_k * 2], hint)
            hits.extend(s for s in scored if request.filter.matches(s.item))
        hits.sort(key=lambda s: (-s.score, s.item.conversation_id, s.item.seq))
        return SearchOutcome(tuple(hits[: request.top_k]), first_hint)


def _ts(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _asks(item: Item) -> bool:
    """Whether an item is a question, flagged or not (detection may be switched off)."""
    return bool(item.flags & Flag.QUESTION) or is_question(item.role, item.content)


def _in_range(hint: TimeHint, timestamp: float) -> bool:
    """Whether a timestamp falls in the range a hint names (False for a hint without one)."""
    since, until = _ts(hint.since), _ts(hint.until)
    if since is None and until is None:
        return False
    return (since is None or timestamp >= since) and (until is None or timestamp < until)
