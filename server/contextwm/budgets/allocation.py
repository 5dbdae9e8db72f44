"""Token budgets per category with borrowing: how a request's budget is shared and what fits.

The rules, for a budget of N tokens:

- Grants. Minimum and maximum are floor(min_share*N) and floor(max_share*N); a category starts
  with floor(share*N), and the tokens flooring loses go one each to the largest lost fractions,
  never past a maximum (the defaults grant exactly N). Shares under 1 leave the rest unassigned.
- Selection. A category keeps its pieces in priority order (ties: input order) while they fit
  what is left of its grant; one that does not fit is skipped, never truncated, and a smaller
  later one may still fit. Overhead is charged with the first kept piece. Need = overhead plus
  all pieces' tokens (0 without pieces).
- SYSTEM is never trimmed: needing more than the assigned tokens (N by default) fails with
  FailedPrecondition. It takes what it lacks from SYSTEM_OUTPUT, DIALOG and CONTEXT (the
  trimming order): what they leave unused above their minimum, then their grants down to their
  minimums, and only then below them.
- Borrowing. Then CONTEXT, DIALOG and SYSTEM_OUTPUT, in that order (SYSTEM_OUTPUT goes short
  first), borrow when they need more than their grant: from what each of their LENDERS leaves
  above both its need and its minimum, never past their maximum, and exactly what their kept
  pieces use beyond the grant. SYSTEM lends last and only above its minimum, which by
  default is its whole share, so by default it never lends: the system prompt's share stays
  reserved for it.

Hence sum(used) <= sum(granted) <= N, used <= granted <= maximum + borrowed (only SYSTEM passes
its maximum), sum(lent) == sum(borrowed), nobody both lends and borrows, and a category ends
below its minimum only when SYSTEM could not be served otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from contextwm.domain.categories import (
    DEFAULT_BUDGETS,
    Category,
    CategoryBudget,
    check_budgets,
)
from contextwm.domain.checks import check_range
from contextwm.domain.errors import FailedPrecondition, InvalidArgument

# Below this budget the 1e-9 slack allowed in the shares' sum is under one token, so the
# floored grants never sum past the budget.
MAX_BUDGET = 100_000_000
# 0.29 * 100 is 28.999999999999996: a millionth of a token is far above float error at
# MAX_BUDGET and far below anything a caller means.
_EPSILON = 1e-6


# Whom each category borrows from, first to last.
LENDERS: Mapping[Category, tuple[Category, ...]] = MappingProxyType(
    {
        Category.SYSTEM: (Category.SYSTEM_OUTPUT, Category.DIALOG, Category.CONTEXT),
        # SYSTEM lends last, and only above its minimum: at the default minimum (its whole
        # share) it never does; lower system.min_share to let it.
        Category.CONTEXT: (Category.DIALOG, Category.SYSTEM_OUTPUT, Category.SYSTEM),
        Category.DIALOG: (Category.CONTEXT, Category.SYSTEM_OUTPUT, Category.SYSTEM),
        Category.SYSTEM_OUTPUT: (Category.DIALOG, Category.CONTEXT, Category.SYSTEM),
    }
)
# Borrowers after SYSTEM, served in reverse trimming order.
_BORROWERS = (Category.CONTEXT, Category.DIALOG, Category.SYSTEM_OUTPUT)


@dataclass(frozen=True, slots=True)
class Piece:
    """A candidate piece of context: the caller's id, its cost, and its rank in its category."""

    key: str  # e.g. "item:42", "contributor:docs"
    tokens: int
    priority: float  # higher is kept first: callers encode recency, relevance, salience


@dataclass(frozen=True, slots=True)
class CategoryReport:
    """What a category was allowed and what it used, in tokens."""

    category: Category
    minimum: int
    maximum: int
    granted: int  # after lending and borrowing
    used: int  # its kept pieces plus its overhead
    lent: int
    borrowed: int

    @property
    def unused(self) -> int:
        return self.granted - self.used


@dataclass(frozen=True, slots=True)
class Allocation:
    """The outcome: pieces kept and dropped per category (in priority order), and the report."""

    kept: Mapping[Category, tuple[Piece, ...]]
    dropped: Mapping[Category, tuple[Piece, ...]]
    reports: tuple[CategoryReport, ...]  # one per category, in Category order
    budget: int


def allocate(
    budget: int,
    pieces: Mapping[Category, Sequence[Piece]],
    budgets: Mapping[Category, CategoryBudget] = DEFAULT_BUDGETS,
    *,
    overhead: Mapping[Category, int] | None = None,
) -> Allocation:
    """Shares a budget between the categories and picks the pieces that fit (module rules).

    Args:
        budget: the request's tokens, 0 to MAX_BUDGET.
        pieces: candidates per category; a category left out has none.
        budgets: shares per category, checked by check_budgets.
        overhead: tokens a category costs if it keeps anything (a heading), default 0.

    Returns:
        The kept and dropped pieces per category and the allocation report.

    Raises:
        InvalidArgument: a budget, overhead, piece cost or priority out of range, or bad budgets.
        FailedPrecondition: the SYSTEM pieces need more tokens than the budget assigns.
    """
    check_range("budget", budget, 0, MAX_BUDGET)
    check_budgets(budgets)
    cost = {c: (overhead or {}).get(c, 0) for c in Category}
    for c in Category:
        check_range(f"overhead[{c}]", cost[c], 0, MAX_BUDGET)
    ranked = {c: _rank(c, pieces.get(c, ())) for c in Category}
    need = {c: cost[c] + sum(p.tokens for p in ranked[c]) if ranked[c] else 0 for c in Category}
    minimum = {c: _tokens(budgets[c].min_share, budget) for c in Category}
    maximum = {c: _tokens(budgets[c].max_share, budget) for c in Category}
    loans = _Loans(_grants(budget, budgets))
    assigned = sum(loans.grant.values())
    if need[Category.SYSTEM] > assigned:
        of = "" if assigned == budget else f"the {assigned} tokens the shares assign of "
        raise FailedPrecondition(
            f"the SYSTEM pieces need {need[Category.SYSTEM]} tokens, more than {of}the"
            f" budget of {budget} tokens; SYSTEM is never trimmed"
        )
    # A lender keeps what it needs and its minimum; only SYSTEM may take more.
    spare_floor = {c: max(need[c], minimum[c]) for c in Category}
    short = max(0, need[Category.SYSTEM] - loans.grant[Category.SYSTEM])
    for floor in (spare_floor, minimum, dict.fromkeys(Category, 0)):
        short = loans.take(Category.SYSTEM, short, floor)
    for c in _BORROWERS:
        if need[c] <= loans.grant[c]:
            continue
        room = sum(max(0, loans.grant[o] - spare_floor[o]) for o in LENDERS[c])
        # Borrow what the pieces kept with all the room use, so no token sits idle in a
        # borrower that a later one could have used (fewer tokens keep the same pieces).
        used = _select(ranked[c], min(maximum[c], loans.grant[c] + room), cost[c])[2]
        loans.take(c, max(0, used - loans.grant[c]), spare_floor)
    kept: dict[Category, tuple[Piece, ...]] = {}
    dropped: dict[Category, tuple[Piece, ...]] = {}
    reports = []
    for c in Category:
        kept[c], dropped[c], used = _select(ranked[c], loans.grant[c], cost[c])
        reports.append(
            CategoryReport(
                c, minimum[c], maximum[c], loans.grant[c], used, loans.lent[c], loans.borrowed[c]
            )
        )
    return Allocation(MappingProxyType(kept), MappingProxyType(dropped), tuple(reports), budget)


class _Loans:
    """Grants as they move from lenders to borrowers, with the running totals."""

    def __init__(self, grant: dict[Category, int]) -> None:
        self.grant = grant
        self.lent = dict.fromkeys(Category, 0)
        self.borrowed = dict.fromkeys(Category, 0)

    def take(self, borrower: Category, tokens: int, floor: Mapping[Category, int]) -> int:
        """Moves up to tokens from the borrower's lenders down to their floors; returns the rest."""
        for lender in LENDERS[borrower]:
            moved = min(tokens, max(0, self.grant[lender] - floor[lender]))
            self.grant[lender] -= moved
            self.lent[lender] += moved
            self.grant[borrower] += moved
            self.borrowed[borrower] += moved
            tokens -= moved
        return tokens


def _tokens(share: float, budget: int) -> int:
    return math.floor(share * budget + _EPSILON)


def _grants(budget: int, budgets: Mapping[Category, CategoryBudget]) -> dict[Category, int]:
    """Starting grants: floored shares, plus flooring's losses up to the maximums."""
    # min_share <= share <= max_share, so floored shares already lie within their bounds.
    grant = {c: _tokens(budgets[c].share, budget) for c in Category}
    maximum = {c: _tokens(budgets[c].max_share, budget) for c in Category}
    target = min(budget, _tokens(math.fsum(budgets[c].share for c in Category), budget))
    # Largest loss first; sorted is stable, so ties go in Category order.
    for c in sorted(Category, key=lambda c: grant[c] - budgets[c].share * budget):
        if sum(grant.values()) >= target:
            break
        if grant[c] < maximum[c]:
            grant[c] += 1
    return grant


def _rank(category: Category, pieces: Sequence[Piece]) -> tuple[Piece, ...]:
    """The pieces by descending priority, ties in input order (sorted is stable)."""
    for p in pieces:
        check_range(f"tokens of {category} piece {p.key!r}", p.tokens, 0, MAX_BUDGET)
        if not math.isfinite(p.priority):
            raise InvalidArgument(f"priority of {category} piece {p.key!r} must be finite")
    return tuple(sorted(pieces, key=lambda p: -p.priority))


def _select(
    ranked: Sequence[Piece], capacity: int, overhead: int
) -> tuple[tuple[Piece, ...], tuple[Piece, ...], int]:
    """Greedy fit in rank order, skipping what does not fit. Returns kept, dropped, used."""
    kept: list[Piece] = []
    dropped: list[Piece] = []
    used = 0
    for p in ranked:
        cost = p.tokens + (0 if kept else overhead)
        if used + cost <= capacity:
            kept.append(p)
            used += cost
        else:
            dropped.append(p)
    return tuple(kept), tuple(dropped), used
