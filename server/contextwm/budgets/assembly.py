"""Assembles a context by category budgets: window items and contributors compete within
their category's grant (allocation.allocate), and the text is rendered in sections."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contextwm.budgets.allocation import Allocation, CategoryReport, Piece, allocate
from contextwm.budgets.contributors import Contribution
from contextwm.domain.categories import Category, CategoryBudget, ContributorType, category_of_role
from contextwm.domain.items import Flag, ScoredItem
from contextwm.ports.tokens import TokenCounter
from contextwm.retrieval.assembly import (
    QUERY_HEADING,
    RECENT_HEADING,
    SEPARATOR,
    TokenAccount,
    history_line,
    history_prefix,
    query_cost,
    recent_line,
    recent_prefix,
)

SYSTEM_HEADING = "# System"
CONTEXT_HEADING = "# Relevant Context"
HISTORY_SUBHEADING = "## Relevant history"
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
    paid_query = query_cost(counter, query, budget)
    items = {f"item:{s.item.seq}": s for s in window}
    offered = {f"piece:{i}": c for i, c in enumerate(contributions) if not c.reason}
    pieces: dict[Category, list[Piece]] = {c: [] for c in Category}
    for key, s in items.items():
        cost = counter.count(recent_prefix(s)) + s.item.token_count + 1
        pieces[category_of_role(s.item.role)].append(Piece(key, cost, window_priority(s)))
    for key, c in offered.items():
        pieces[Category.CONTEXT].append(Piece(key, c.tokens, c.score))
    # Each category pays for its heading; DIALOG and SYSTEM_OUTPUT each for "# Recent
    # Context", which they share, so together they may use a few tokens less than reported.
    heading = counter.count(RECENT_HEADING) + 1
    overhead = {
        Category.SYSTEM: counter.count(SYSTEM_HEADING) + 1,
        Category.CONTEXT: counter.count(CONTEXT_HEADING) + counter.count(HISTORY_SUBHEADING) + 2,
        Category.DIALOG: heading,
        Category.SYSTEM_OUTPUT: heading,
    }
    allocated = budget - paid_query
    allocation = allocate(allocated, pieces, budgets, overhead=overhead)
    copies = _copies_of_chosen_files(allocation, items, offered)
    if copies:
        # A file read the window holds and a chosen working file with the same content: the
        # read goes (the file is shown once) and what it held is shared again.
        pieces = {c: [p for p in ps if p.key not in copies] for c, ps in pieces.items()}
        again = allocate(allocated, pieces, budgets, overhead=overhead)
        still = {p.key for p in again.kept[Category.CONTEXT]}
        if {p.key for p in allocation.kept[Category.CONTEXT]} <= still:
            allocation = again
    kept = {c: list(allocation.kept[c]) for c in Category}
    trimmed: dict[str, str] = {}
    text = _render(kept, items, offered, query)
    total = counter.count(text)
    # Pieces were counted apart; a merge across a seam can add a token: drop the lowest
    # piece in trimming order until the exact count fits (seldom more than one round).
    while total > budget:
        victim = next(c for c in _TRIM_ORDER if kept[c])
        trimmed[kept[victim].pop().key] = "dropped to fit the exact token count"
        text = _render(kept, items, offered, query)
        total = counter.count(text)
    reports = tuple(
        dataclasses.replace(r, used=_used(kept[r.category], overhead[r.category]))
        for r in allocation.reports
    )
    recent = sorted(
        (items[p.key] for c in Category if c is not Category.CONTEXT for p in kept[c]),
        key=lambda s: s.item.seq,
    )
    history = sorted(
        (s for p in kept[Category.CONTEXT] if p.key in offered for s in offered[p.key].items),
        key=lambda s: s.item.seq,
    )
    return BudgetedAssembly(
        recent=tuple(recent),
        history=tuple(history),
        text=text,
        tokens=TokenAccount(
            budget=budget,
            total=total,
            recent=_section_tokens(counter, kept, items, Category.DIALOG, Category.SYSTEM_OUTPUT),
            history=counter.count(_context_section(kept[Category.CONTEXT], offered))
            if kept[Category.CONTEXT]
            else 0,
            query=paid_query,
            recent_omitted=len(window) - len(recent),
            encoding=counter.encoding,
            system=_section_tokens(counter, kept, items, Category.SYSTEM, heading=SYSTEM_HEADING),
        ),
        report=AllocationReport(
            allocated,
            reports,
            _outcomes(contributions, offered, kept[Category.CONTEXT], trimmed),
        ),
    )


def window_priority(s: ScoredItem) -> float:
    """A window item's rank in its category: recency plus similarity to the query, so the
    oldest and least relevant go first; pinned items go last. Role bias and the other flags
    are left out here: they would keep questions and drop the answers next to them."""
    pinned = 2.0 if s.item.flags & Flag.PINNED else 0.0
    return s.parts.recency + max(0.0, s.parts.similarity) + pinned


def _copies_of_chosen_files(
    allocation: Allocation, items: Mapping[str, ScoredItem], offered: Mapping[str, Contribution]
) -> set[str]:
    """Kept window items holding a whole file whose current content a kept working-file
    piece shows in full (same path, same text)."""
    chosen = [offered[p.key] for p in allocation.kept[Category.CONTEXT]]
    copies: set[str] = set()
    for c in (Category.SYSTEM_OUTPUT, Category.DIALOG):
        for p in allocation.kept[c]:
            item = items[p.key].item
            if item.file is None or not item.file.carries_whole_file or items[p.key].replaced:
                continue
            if any(piece.shows_file(item.file.path, item.content) for piece in chosen):
                copies.add(p.key)
    return copies


def _used(kept: Sequence[Piece], overhead: int) -> int:
    return overhead + sum(p.tokens for p in kept) if kept else 0


def _section_tokens(
    counter: TokenCounter,
    kept: Mapping[Category, list[Piece]],
    items: Mapping[str, ScoredItem],
    *categories: Category,
    heading: str = RECENT_HEADING,
) -> int:
    chosen = [items[p.key] for c in categories for p in kept[c]]
    return counter.count(_item_section(chosen, heading)) if chosen else 0


def _item_section(chosen: Sequence[ScoredItem], heading: str) -> str:
    lines = [recent_line(s) for s in sorted(chosen, key=lambda s: s.item.seq)]
    return SEPARATOR.join([heading, *lines])


def _context_section(kept: Sequence[Piece], offered: Mapping[str, Contribution]) -> str:
    chosen = [offered[p.key] for p in kept]
    parts: list[str] = [CONTEXT_HEADING]
    for t in _WORKSPACE_ORDER:
        parts.extend(c.text for c in chosen if c.type == t)
    hits = sorted(
        (s for c in chosen if c.type is ContributorType.RETRIEVAL for s in c.items),
        key=lambda s: s.item.seq,
    )
    if hits:
        parts.append(HISTORY_SUBHEADING)
        parts.extend(history_line(s) for s in hits)
    return SEPARATOR.join(parts)


def _render(
    kept: Mapping[Category, list[Piece]],
    items: Mapping[str, ScoredItem],
    offered: Mapping[str, Contribution],
    query: str | None,
) -> str:
    """Sections: system, relevant context, recent context (dialog and tool output in seq
    order), current query; empty ones are left out."""
    sections: list[str] = []
    if kept[Category.SYSTEM]:
        sections.append(
            _item_section([items[p.key] for p in kept[Category.SYSTEM]], SYSTEM_HEADING)
        )
    if kept[Category.CONTEXT]:
        sections.append(_context_section(kept[Category.CONTEXT], offered))
    recent = [items[p.key] for c in (Category.DIALOG, Category.SYSTEM_OUTPUT) for p in kept[c]]
    if recent:
        sections.append(_item_section(recent, RECENT_HEADING))
    if query:
        sections.append(f"{QUERY_HEADING}{SEPARATOR}{query}")
    return SEPARATOR.join(sections)


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


def retrieval_line_cost(counter: TokenCounter, s: ScoredItem) -> int:
    """What one history line costs inside CONTEXT: prefix, content, separator."""
    return counter.count(history_prefix(s)) + s.item.token_count + 1


def retrieval_text(items: Sequence[ScoredItem]) -> str:
    """A retrieval piece's text as it is rendered (its lines, in seq order)."""
    return SEPARATOR.join(history_line(s) for s in sorted(items, key=lambda s: s.item.seq))
