"""Context categories and contributor types, with their budgets and weights: values and checks."""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from contextwm.domain.checks import check_range
from contextwm.domain.errors import InvalidArgument

# Float slack allowed in the sum of the shares.
_SUM_TOLERANCE = 1e-9


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
        # Fixed at 10% (min = share = max), so by default it never lends its room; it grows
        # past that only by taking what it lacks from the others.
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
    """A source of CONTEXT beyond the dialog."""

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
