"""The enhanced context by category budgets: window items by category, with contributors
(workspace files, docs, the code map and history hits) competing for CONTEXT."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from contextwm.budgets.assembly import AllocationReport, assemble_by_category, retrieval_piece
from contextwm.budgets.contributors import (
    MAX_WORKING_FILES,
    Contribution,
    PieceCache,
    SalienceCache,
    WorkspaceContributors,
    share_caps,
)
from contextwm.conversations.embedding_model import require_current
from contextwm.conversations.engine import ContextEngine
from contextwm.domain.categories import (
    BudgetPatch,
    Category,
    ContributorType,
    patch_budgets,
    patch_contributor_weights,
)
from contextwm.domain.errors import FailedPrecondition
from contextwm.domain.items import ItemState
from contextwm.ports.item_store import ItemStore
from contextwm.retrieval.context_ranking import ContextRanker
from contextwm.retrieval.neighbours import HistoryCandidate
from contextwm.retrieval.pipeline import LineCosts
from contextwm.retrieval.query import QueryReader
from contextwm.retrieval.requests import ContextRequest, EnhancedContext, check_context_request

# Retrieval contributes archived history: the window's items are DIALOG's already.
HISTORY_STATES = (ItemState.ARCHIVED, ItemState.COMPACTED)


@dataclass(frozen=True, slots=True)
class CategoryRequest:
    """Asks for a context assembled by category budgets, with contributors.

    Budgets and weights patch the conversation's; files are working files the request names,
    offered ahead of those the conversation's items refer to.
    """

    budgets: Mapping[Category, BudgetPatch] = field(default_factory=dict)
    contributor_weights: Mapping[ContributorType, float] = field(default_factory=dict)
    files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class BudgetedContext:
    """An enhanced context assembled by category, and how the budget was shared."""

    context: EnhancedContext
    allocation: AllocationReport


class CategoryContexts:
    """Thread-safe: holds the conversation's lock only around the in-memory parts, never
    while reading files or embedding them."""

    def __init__(self, engine: ContextEngine, ranking: ContextRanker, reader: QueryReader) -> None:
        # The engine is where the parts are built; budgets keep only those they use.
        self.runtimes = engine.runtimes
        self.counters = engine.counters
        self.limits = engine.limits
        self.store: ItemStore = engine.store
        self.workspace_of = engine.workspace_of
        self.ranking = ranking
        self.reader = reader
        self._salience = SalienceCache(engine.embedder)
        self._pieces = PieceCache(1024)
        engine.caches["contributor_embeddings"] = self._salience
        engine.caches["contributor_pieces"] = self._pieces

    def get_context(
        self,
        namespace: str,
        conversation_id: str,
        request: ContextRequest,
        asked: CategoryRequest,
    ) -> BudgetedContext:
        """The context by category budgets: window items by category, contributors in CONTEXT.

        Raises:
            InvalidArgument: bad options or budgets, or a budget that cannot hold the query.
            NotFound: no such conversation.
            FailedPrecondition: files named without a workspace; a system prompt larger
                than the whole budget.
            PermissionDenied: a named file outside the workspace.
            FailedPrecondition: dense or hybrid mode on a conversation whose vectors come
                from another model.
        """
        check_context_request(request, self.limits)
        rt = self.runtimes.get(namespace, conversation_id)
        require_current([rt], self.ranking.model_name, request.mode)
        settings = rt.record.settings
        budgets = patch_budgets(settings.category_budgets, asked.budgets)
        weights = patch_contributor_weights(settings.contributor_weights, asked.contributor_weights)
        workspace = self.workspace_of(settings)
        if asked.files and workspace is None:
            raise FailedPrecondition(
                "the request names files but the conversation has no workspace: set its"
                " workspace_root or start the server with --workspace"
            )
        named = [workspace.relative(p) for p in asked.files] if workspace else []
        counter = self.counters(settings.encoding)
        retrieves = weights[ContributorType.RETRIEVAL] > 0
        words = retrieves and request.mode != "dense"
        asked_query = self.reader.read(
            rt,
            request.query,
            as_of=request.as_of,
            time_hints=request.time_hints,
            look_up=(HISTORY_STATES, request.hits) if words else None,
        )
        with rt.lock:
            q = self.reader.focused(rt, asked_query)
            # Scored against the query, so the least relevant window items go first.
            window = self.ranking.window(rt, q.vector)
            candidates: list[HistoryCandidate] = []
            if retrieves:
                candidates = self.ranking.history(rt, q, request, HISTORY_STATES)
            paths = self.store.file_paths(rt.key, MAX_WORKING_FILES)
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
            candidates, {w.item.seq for w in window}, weights, LineCosts(counter)
        )
        assembled = assemble_by_category(
            window,
            contributions,
            query=q.text,
            budget=request.max_tokens,
            budgets=budgets,
            counter=counter,
        )
        context = EnhancedContext(
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
        return BudgetedContext(context, assembled.report)

    def _retrieval_pieces(
        self,
        candidates: Sequence[HistoryCandidate],
        window: set[int],
        weights: Mapping[ContributorType, float],
        costs: LineCosts,
    ) -> list[Contribution]:
        """Each archive hit with the turn that asks or answers it, as one piece; a turn the
        window holds stays there, and no turn appears in two pieces. Salience is the larger
        of the hit's similarity and its normalised BM25 (so exact names count too)."""
        pieces: list[Contribution] = []
        taken: set[int] = set(window)
        for cand in candidates:
            hit = cand.hit
            if hit.item.seq in taken:
                continue
            items = [hit]
            n = cand.neighbor
            if n is not None and n.item.seq not in taken:
                items.append(n)
            taken.update(s.item.seq for s in items)
            text, tokens = retrieval_piece(costs, items)
            pieces.append(
                Contribution(
                    ContributorType.RETRIEVAL,
                    f"#{hit.item.seq}",
                    text,
                    tokens,
                    weights[ContributorType.RETRIEVAL],
                    min(1.0, max(0.0, hit.parts.similarity, hit.parts.lexical)),
                    items=tuple(items),
                )
            )
        return pieces
