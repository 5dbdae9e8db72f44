"""The category layout of the enhanced context: window items and contributors compete within
their category's grant (allocation.allocate)."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from contextwm.budgets.allocation import Allocation, CategoryReport, Piece, allocate
from contextwm.budgets.contributors import Contribution
from contextwm.domain.categories import Category, CategoryBudget, ContributorType, category_of_role
from contextwm.domain.items import Flag, ScoredItem
from contextwm.ports.tokens import TokenCounter
from contextwm.retrieval.paragraph_tokens import SEPARATOR
from contextwm.retrieval.pipeline import (
    CONTEXT_HEADING,
    HISTORY_SUBHEADING,
    RECENT_HEADING,
    SYSTEM_HEADING,
    LineCosts,
    Section,
    TokenAccount,
    assemble,
    day_heading,
    day_of,
    item_lines,
    year_of,
)

# Workspace contributors render in this order inside CONTEXT; retrieval hits come last, in
# seq order under their own subheading.
_WORKSPACE_ORDER = (
    ContributorType.PROJECT_DOCS,
    ContributorType.CODEBASE_MAP,
    ContributorType.WORKING_FILES,
)
# Trimming order when the exact count of the text is over budget (seam merges, rarely).
_TRIM_ORDER = (Category.SYSTEM_OUTPUT, Category.DIALOG, Category.CONTEXT)


@dataclass(frozen=True, slots=True)
class ContributorOutcome:
    """A contributor piece and what became of it."""

    contribution: Contribution
    chosen: bool
    reason: str  # why it was left out; "" when chosen


@dataclass(frozen=True, slots=True)
class AllocationReport:
    allocated: int  # the tokens shared between the categories: the budget less the query
    categories: tuple[CategoryReport, ...]  # in Category order
    contributors: tuple[ContributorOutcome, ...]  # chosen first, each group by score


@dataclass(frozen=True, slots=True)
class BudgetedAssembly:
    recent: tuple[ScoredItem, ...]  # SYSTEM, DIALOG and SYSTEM_OUTPUT items kept, in seq order
    history: tuple[ScoredItem, ...]  # retrieval hits kept, in seq order
    text: str
    tokens: TokenAccount
    report: AllocationReport


class CategoryLayout:
    """Sections: system, relevant context (workspace pieces, then history hits), recent
    context (dialog and tool output in seq order)."""

    def __init__(
        self,
        window: Sequence[ScoredItem],
        contributions: Sequence[Contribution],
        budgets: Mapping[Category, CategoryBudget],
    ) -> None:
        self.window = window
        self.budgets = budgets
        self.items = {f"item:{s.item.seq}": s for s in window}
        self.offered = {f"piece:{i}": c for i, c in enumerate(contributions) if not c.reason}
        self.kept: dict[Category, list[Piece]] = {}
        self.overhead: dict[Category, int] = {}
        self.allocation: Allocation | None = None
        self.trimmed: dict[str, str] = {}

    def pack(self, left: int, costs: LineCosts) -> None:
        pieces: dict[Category, list[Piece]] = {c: [] for c in Category}
        # A day's heading is charged to the item of that day kept first (the highest
        # priority in its category), and the year a heading names to the first kept of its
        # year; the system prompt has none.
        dated = {
            k: s
            for k, s in self.items.items()
            if category_of_role(s.item.role) is not Category.SYSTEM
        }
        heads: dict[str, int] = defaultdict(int)
        for key in _first_kept(dated, lambda s: day_of(s.item.timestamp)):
            heads[key] += costs.text(day_heading(dated[key].item.timestamp))
        for key in _first_kept(dated, lambda s: year_of(s.item.timestamp)):
            heads[key] += costs.year(year_of(dated[key].item.timestamp))
        for key, s in self.items.items():
            cost = costs.line(s) + heads.get(key, 0)
            pieces[category_of_role(s.item.role)].append(Piece(key, cost, window_priority(s)))
        for key, c in self.offered.items():
            pieces[Category.CONTEXT].append(Piece(key, c.tokens, c.score))
        # Each category pays for its heading; DIALOG and SYSTEM_OUTPUT each for "# Recent
        # Context", which they share, so together they may use a few tokens less than reported.
        heading = costs.text(RECENT_HEADING)
        self.overhead = overhead = {
            Category.SYSTEM: costs.text(SYSTEM_HEADING),
            Category.CONTEXT: costs.text(CONTEXT_HEADING) + costs.text(HISTORY_SUBHEADING),
            Category.DIALOG: heading,
            Category.SYSTEM_OUTPUT: heading,
        }
        allocation = allocate(left, pieces, self.budgets, overhead=overhead)
        copies = self._copies_of_chosen_files(allocation)
        if copies:
            # A file read the window holds and a chosen working file with the same content:
            # the read goes (the file is shown once) and what it held is shared again.
            pieces = {c: [p for p in ps if p.key not in copies] for c, ps in pieces.items()}
            again = allocate(left, pieces, self.budgets, overhead=overhead)
            still = {p.key for p in again.kept[Category.CONTEXT]}
            if {p.key for p in allocation.kept[Category.CONTEXT]} <= still:
                allocation = again
        self.allocation = allocation
        self.kept = {c: list(allocation.kept[c]) for c in Category}

    def _copies_of_chosen_files(self, allocation: Allocation) -> set[str]:
        """Kept window items holding a whole file whose current content a kept working-file
        piece shows in full (same path, same text)."""
        chosen = [self.offered[p.key] for p in allocation.kept[Category.CONTEXT]]
        copies: set[str] = set()
        for c in (Category.SYSTEM_OUTPUT, Category.DIALOG):
            for p in allocation.kept[c]:
                s = self.items[p.key]
                item = s.item
                if item.file is None or not item.file.carries_whole_file or s.replaced:
                    continue
                if any(piece.shows_file(item.file.path, item.content) for piece in chosen):
                    copies.add(p.key)
        return copies

    def sections(self) -> list[Section]:
        kept, items = self.kept, self.items
        chosen = [self.offered[p.key] for p in kept[Category.CONTEXT]]
        blocks = [c.text for t in _WORKSPACE_ORDER for c in chosen if c.type == t]
        hits = [s for c in chosen if c.type is ContributorType.RETRIEVAL for s in c.items]
        recent = [items[p.key] for c in (Category.DIALOG, Category.SYSTEM_OUTPUT) for p in kept[c]]
        return [
            Section(
                "system",
                SYSTEM_HEADING,
                [items[p.key] for p in kept[Category.SYSTEM]],
                dated=False,
            ),
            Section("history", CONTEXT_HEADING, hits, blocks, HISTORY_SUBHEADING),
            Section("recent", RECENT_HEADING, recent),
        ]

    def drop_weakest(self) -> bool:
        """The lowest piece in trimming order; SYSTEM is never trimmed."""
        victim = next((c for c in _TRIM_ORDER if self.kept[c]), None)
        if victim is None:
            return False
        self.trimmed[self.kept[victim].pop().key] = "dropped to fit the exact token count"
        return True

    def omitted(self) -> int:
        kept = sum(len(self.kept[c]) for c in Category if c is not Category.CONTEXT)
        return len(self.window) - kept

    def report(self, contributions: Sequence[Contribution]) -> AllocationReport:
        """How the budget was shared, with what each category kept after the exact fit."""
        assert self.allocation is not None
        reports = tuple(
            dataclasses.replace(r, used=_used(self.kept[r.category], self.overhead[r.category]))
            for r in self.allocation.reports
        )
        return AllocationReport(
            self.allocation.budget,
            reports,
            _outcomes(contributions, self.offered, self.kept[Category.CONTEXT], self.trimmed),
        )


def assemble_by_category(
    window: Sequence[ScoredItem],
    contributions: Sequence[Contribution],
    *,
    query: str | None,
    budget: int,
    budgets: Mapping[Category, CategoryBudget],
    counter: TokenCounter,
) -> BudgetedAssembly:
    """Shares budget between the categories and packs each from its candidates.

    Args:
        window: the window's items, scored against the query (see window_priority).
        contributions: CONTEXT candidates; those with a reason are reported, never offered.
        query: rendered under "# Current Query" and paid for before the categories share.
        budget: the most tokens the rendered text may have.
        budgets: the categories' shares.
        counter: the conversation's token counter.

    Raises:
        InvalidArgument: the budget cannot hold the query.
        FailedPrecondition: the system items alone need more than the budget assigns.
    """
    layout = CategoryLayout(window, contributions, budgets)
    fitted = assemble(layout, query=query, budget=budget, counter=counter)
    return BudgetedAssembly(
        recent=tuple(sorted(fitted.items("system") + fitted.items("recent"), key=_seq)),
        history=fitted.items("history"),
        text=fitted.text,
        tokens=fitted.tokens,
        report=layout.report(contributions),
    )


def _seq(s: ScoredItem) -> int:
    return s.item.seq


def window_priority(s: ScoredItem) -> float:
    """A window item's rank in its category: recency plus similarity to the query, so the
    oldest and least relevant go first; pinned items go last. Role bias and the other flags
    are left out here: they would keep questions and drop the answers next to them."""
    pinned = 2.0 if s.item.flags & Flag.PINNED else 0.0
    return s.parts.recency + max(0.0, s.parts.similarity) + pinned


def _used(kept: Sequence[Piece], overhead: int) -> int:
    return overhead + sum(p.tokens for p in kept) if kept else 0


def _outcomes(
    contributions: Sequence[Contribution],
    offered: Mapping[str, Contribution],
    kept: Sequence[Piece],
    trimmed: Mapping[str, str],
) -> tuple[ContributorOutcome, ...]:
    chosen_keys = {p.key for p in kept}
    chosen = [ContributorOutcome(offered[p.key], True, "") for p in kept]
    left: list[ContributorOutcome] = []
    for key, c in offered.items():
        if key not in chosen_keys:
            left.append(
                ContributorOutcome(c, False, trimmed.get(key, "did not fit the CONTEXT grant"))
            )
    left.extend(ContributorOutcome(c, False, c.reason) for c in contributions if c.reason)
    chosen.sort(key=lambda o: -o.contribution.score)
    left.sort(key=lambda o: -o.contribution.score)
    return (*chosen, *left)


def _first_kept(items: dict[str, ScoredItem], part: Callable[[ScoredItem], int]) -> list[str]:
    """The key of each part's item of the highest window priority within its category."""
    best: dict[tuple[Category, int], tuple[float, str]] = {}
    for key, s in items.items():
        at = (category_of_role(s.item.role), part(s))
        priority = window_priority(s)
        if priority > best.get(at, (-1.0, ""))[0]:
            best[at] = (priority, key)
    return [key for _, key in best.values()]


def retrieval_piece(costs: LineCosts, items: Sequence[ScoredItem]) -> tuple[str, int]:
    """A retrieval piece's text as it is rendered on its own (its lines in seq order under
    their days' headings) and what it costs inside CONTEXT."""
    return SEPARATOR.join(item_lines(items)), costs.lines(items)
