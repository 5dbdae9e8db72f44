"""Converters of category budgets: categories, contributors, options, allocation reports."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from contextwm_client._convert.common import UNSPECIFIED, by_name, by_number, enum_value, if_set
from contextwm_client._types import (
    AllocationReport,
    CategoryAllocation,
    CategoryBudget,
    CategoryOptions,
    ContributorPiece,
)
from contextwm_client._vocabulary import Category, ContributorType, Unspecified
from contextwm_client.v1 import contextwm_pb2 as pb

_CATEGORY_PAIRS: tuple[tuple[Category, pb.Category.ValueType], ...] = (
    ("system", pb.CATEGORY_SYSTEM),
    ("context", pb.CATEGORY_CONTEXT),
    ("dialog", pb.CATEGORY_DIALOG),
    ("system_output", pb.CATEGORY_SYSTEM_OUTPUT),
)
_CONTRIBUTOR_TYPE_PAIRS: tuple[tuple[ContributorType, pb.ContributorType.ValueType], ...] = (
    ("working_files", pb.CONTRIBUTOR_TYPE_WORKING_FILES),
    ("retrieval", pb.CONTRIBUTOR_TYPE_RETRIEVAL),
    ("codebase_map", pb.CONTRIBUTOR_TYPE_CODEBASE_MAP),
    ("project_docs", pb.CONTRIBUTOR_TYPE_PROJECT_DOCS),
)
_CATEGORIES = by_name(_CATEGORY_PAIRS)
_CONTRIBUTOR_TYPES = by_name(_CONTRIBUTOR_TYPE_PAIRS)
_CATEGORY_NAMES = by_number(_CATEGORY_PAIRS)
_CONTRIBUTOR_TYPE_NAMES = by_number(_CONTRIBUTOR_TYPE_PAIRS)


def to_proto_category(category: str) -> pb.Category.ValueType:
    """Converts "system", "context", "dialog" or "system_output" to the enum.

    Raises:
        ValueError: For any other name.
    """
    return enum_value(_CATEGORIES, category, "category")


def from_proto_category(category: int) -> Category | Unspecified:
    """Converts the enum to its lower-case name ("unspecified" for values this client lacks)."""
    return _CATEGORY_NAMES.get(category, UNSPECIFIED)


def from_proto_optional_category(category: int) -> Category | None:
    """Converts the enum to its lower-case name; None when unset (or unknown to this client)."""
    return _CATEGORY_NAMES.get(category)


def to_proto_contributor_type(contributor_type: str) -> pb.ContributorType.ValueType:
    """Converts "working_files", "retrieval", "codebase_map" or "project_docs" to the enum.

    Raises:
        ValueError: For any other name.
    """
    return enum_value(_CONTRIBUTOR_TYPES, contributor_type, "contributor type")


def from_proto_contributor_type(contributor_type: int) -> ContributorType | Unspecified:
    """Converts the enum to its lower-case name ("unspecified" for values this client lacks)."""
    return _CONTRIBUTOR_TYPE_NAMES.get(contributor_type, UNSPECIFIED)


def to_proto_category_budget(value: CategoryBudget) -> pb.CategoryBudget:
    """Converts a CategoryBudget to its message; None shares stay unset (unchanged).

    Raises:
        ValueError: If the category is not a known category.
    """
    return pb.CategoryBudget(
        category=to_proto_category(value.category),
        share=value.share,
        min_share=value.min_share,
        max_share=value.max_share,
    )


def from_proto_category_budget(message: pb.CategoryBudget) -> CategoryBudget:
    """Converts a CategoryBudget message to a CategoryBudget; unset shares become None."""
    m = message
    return CategoryBudget(
        category=from_proto_category(m.category),
        share=if_set(m, "share", m.share),
        min_share=if_set(m, "min_share", m.min_share),
        max_share=if_set(m, "max_share", m.max_share),
    )


def to_proto_category_budgets(values: Sequence[CategoryBudget]) -> list[pb.CategoryBudget]:
    """Converts budgets to their messages.

    Raises:
        ValueError: If a category is unknown or given twice (the server would refuse it).
    """
    seen: set[str] = set()
    for value in values:
        if value.category in seen:
            raise ValueError(f"category {value.category!r} is given twice in the budgets")
        seen.add(value.category)
    return [to_proto_category_budget(value) for value in values]


def to_proto_contributor_weights(values: Mapping[str, float]) -> list[pb.ContributorWeight]:
    """Converts weights keyed by contributor type to their messages.

    Raises:
        ValueError: If a key is not a known contributor type.
    """
    return [
        pb.ContributorWeight(type=to_proto_contributor_type(name), weight=weight)
        for name, weight in values.items()
    ]


def from_proto_contributor_weights(
    messages: Iterable[pb.ContributorWeight],
) -> dict[str, float]:
    """Converts ContributorWeight messages to weights keyed by contributor type."""
    return {from_proto_contributor_type(m.type): m.weight for m in messages}


def to_proto_category_options(value: CategoryOptions) -> pb.CategoryOptions:
    """Converts CategoryOptions to its message.

    Raises:
        ValueError: If a category or contributor type is unknown, or a category is given
            twice.
    """
    return pb.CategoryOptions(
        budgets=to_proto_category_budgets(value.budgets),
        contributor_weights=to_proto_contributor_weights(value.contributor_weights),
        files=value.files,
    )


def from_proto_category_allocation(message: pb.CategoryAllocation) -> CategoryAllocation:
    """Converts a CategoryAllocation message to a CategoryAllocation."""
    return CategoryAllocation(
        category=from_proto_category(message.category),
        minimum=message.minimum,
        maximum=message.maximum,
        granted=message.granted,
        used=message.used,
        lent=message.lent,
        borrowed=message.borrowed,
    )


def from_proto_contributor_piece(message: pb.ContributorPiece) -> ContributorPiece:
    """Converts a ContributorPiece message to a ContributorPiece."""
    return ContributorPiece(
        type=from_proto_contributor_type(message.type),
        source=message.source,
        chosen=message.chosen,
        weight=message.weight,
        salience=message.salience,
        score=message.score,
        tokens=message.tokens,
        detail=message.detail,
        reason=message.reason,
        content=message.content,
    )


def from_proto_allocation_report(message: pb.AllocationReport) -> AllocationReport:
    """Converts an AllocationReport message to an AllocationReport."""
    return AllocationReport(
        allocated=message.allocated,
        categories=tuple(from_proto_category_allocation(c) for c in message.categories),
        contributors=tuple(from_proto_contributor_piece(c) for c in message.contributors),
    )
