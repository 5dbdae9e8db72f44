"""Token budgets per category with borrowing: how a request's budget is shared and what fits.

The rules, for a budget of N tokens (issue 4, points 1-3; seed 002):

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
  default is its whole share, so by default it never lends (seed 002).

Hence sum(used) <= sum(granted) <= N, used <= granted <= maximum + borrowed (only SYSTEM passes
its maximum), sum(lent) == sum(borrowed), nobody both lends and borrows, and a category ends
below its minimum only when SYSTEM could not be served otherwise.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from contextwm.domain.checks import check_range
from contextwm.domain.errors import FailedPrecondition, InvalidArgument

# Below this budget the 1e-9 slack allowed in the shares' sum is under one token, so the
# floored grants never sum past the budget.
MAX_BUDGET = 100_000_000
_SUM_TOLERANCE = 1e-9
# 0.29 * 100 is 28.999999999999996: a millionth of a token is far above float error at
# MAX_BUDGET and far below anything a caller means.
_EPSILON = 1e-6


class Category(enum.StrEnum):
    """What a piece is; this order is the report's."""

    SYSTEM = "system"  # system prompts: never trimmed
    CONTEXT = "context"  # contributors and retrieved history
    DIALOG = "dialog"  # user and assistant turns
    SYSTEM_OUTPUT = "system_output"  # tool and command output: trimmed first


@dataclass(frozen=True, slots=True)
class CategoryBudget:
    """A category's part of a request's budget, as shares between 0 and 1."""

    share: float  # its starting grant
    min_share: float = 0.0  # it never lends below this (only SYSTEM may take it)
    max_share: float = 1.0  # it never borrows past this (SYSTEM excepted)


@dataclass(frozen=True, slots=True)
class BudgetPatch:
    """A category's budget as a request or an update states it: None keeps the field."""

    share: float | None = None
    min_share: float | None = None
    max_share: float | None = None


DEFAULT_BUDGETS: Mapping[Category, CategoryBudget] = MappingProxyType(
    {
        # Fixed at 10% as in seed 002; it grows past that only by borrowing.
        Category.SYSTEM: CategoryBudget(0.10, 0.10, 0.10),
        # Mins keep each a floor against a huge system prompt and against borrowers; a lender
        # keeps its minimum even when it needs less, so they are small: what they hold idle
        # is lost to the response. Maxes keep one category from swallowing the window through
        # borrowing: tool output at most a quarter of it.
        Category.CONTEXT: CategoryBudget(0.35, 0.05, 0.70),
        Category.DIALOG: CategoryBudget(0.50, 0.10, 0.85),
        Category.SYSTEM_OUTPUT: CategoryBudget(0.05, 0.0, 0.25),
    }
)


def category_of_role(role: str) -> Category:
    """The category of a stored item: system prompts, dialog turns, or tool and file output."""
    if role == "system":
        return Category.SYSTEM
    if role in ("user", "assistant"):
        return Category.DIALOG
    return Category.SYSTEM_OUTPUT  # tool, file, error


class ContributorType(enum.StrEnum):
    """A source of CONTEXT beyond the dialog (seed 002)."""

    WORKING_FILES = "working_files"
    RETRIEVAL = "retrieval"
    CODEBASE_MAP = "codebase_map"
    PROJECT_DOCS = "project_docs"


DEFAULT_CONTRIBUTOR_WEIGHTS: Mapping[ContributorType, float] = MappingProxyType(
    {
        ContributorType.WORKING_FILES: 0.4,
        ContributorType.RETRIEVAL: 0.25,
        ContributorType.CODEBASE_MAP: 0.2,
        ContributorType.PROJECT_DOCS: 0.15,
    }
)


def check_contributor_weights(weights: Mapping[ContributorType, float]) -> None:
    """Checks contributor weights: each 0 (switched off) to 1, every type present.

    Raises:
        InvalidArgument: naming the contributor at fault.
    """
    missing = [t.value for t in ContributorType if t not in weights]
    if missing:
        raise InvalidArgument(f"contributor weights: missing {', '.join(missing)}")
    for t in ContributorType:
        check_range(f"contributor_weights[{t}]", weights[t], 0.0, 1.0)


# Whom each category borrows from, first to last (seed 002: CONTEXT from DIALOG first).
LENDERS: Mapping[Category, tuple[Category, ...]] = MappingProxyType(
    {
        Category.SYSTEM: (Category.SYSTEM_OUTPUT, Category.DIALOG, Category.CONTEXT),
        # SYSTEM lends last, and only above its minimum: at the default minimum (its whole
        # share) it never does, as in seed 002; lower system.min_share to let it.
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


def check_budgets(budgets: Mapping[Category, CategoryBudget]) -> None:
    """Checks a budget configuration.

    Raises:
        InvalidArgument: a category missing, or naming the category and field at fault: a
            share outside [0, 1], min_share above share, share above max_share, or shares
            summing past 1. (Mins then sum to at most 1 too.)
    """
    missing = [c.value for c in Category if c not in budgets]
    if missing:
        raise InvalidArgument(f"budgets: missing categories {', '.join(missing)}")
    for c in Category:
        b = budgets[c]
        for name in ("share", "min_share", "max_share"):
            check_range(f"budgets[{c}].{name}", getattr(b, name), 0.0, 1.0)
        if not b.min_share <= b.share <= b.max_share:
            bad = "min_share" if b.min_share > b.share else "max_share"
            raise InvalidArgument(
                f"budgets[{c}].{bad} ({getattr(b, bad):g}) breaks min_share <= share <= max_share"
                f" (share {b.share:g})"
            )
    total = math.fsum(budgets[c].share for c in Category)
    if total > 1.0 + _SUM_TOLERANCE:
        raise InvalidArgument(f"budgets: the shares sum to {total:g}, more than 1")


def patch_budgets(
    base: Mapping[Category, CategoryBudget], patch: Mapping[Category, BudgetPatch]
) -> Mapping[Category, CategoryBudget]:
    """base with the patch's fields applied, checked as a whole (check_budgets)."""
    merged = dict(base)
    for c, p in patch.items():
        b = merged[c]
        merged[c] = CategoryBudget(
            b.share if p.share is None else p.share,
            b.min_share if p.min_share is None else p.min_share,
            b.max_share if p.max_share is None else p.max_share,
        )
    check_budgets(merged)
    return MappingProxyType(merged)


def patch_contributor_weights(
    base: Mapping[ContributorType, float], patch: Mapping[ContributorType, float]
) -> Mapping[ContributorType, float]:
    """base with the patch's weights applied, checked (check_contributor_weights)."""
    merged = {**base, **patch}
    check_contributor_weights(merged)
    return MappingProxyType(merged)


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
