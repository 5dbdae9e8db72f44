"""Converters for category budgets and contributors: to_proto_x / from_proto_x."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.budgets.allocation import CategoryReport
from contextwm.budgets.assembly import AllocationReport
from contextwm.budgets.context import CategoryRequest
from contextwm.domain.categories import BudgetPatch, Category, CategoryBudget, ContributorType
from contextwm.domain.errors import InvalidArgument

_CATEGORY_TO_PROTO = {
    Category.SYSTEM: pb.CATEGORY_SYSTEM,
    Category.CONTEXT: pb.CATEGORY_CONTEXT,
    Category.DIALOG: pb.CATEGORY_DIALOG,
    Category.SYSTEM_OUTPUT: pb.CATEGORY_SYSTEM_OUTPUT,
}
_CATEGORY_FROM_PROTO = {v: k for k, v in _CATEGORY_TO_PROTO.items()}
_TYPE_TO_PROTO = {
    ContributorType.WORKING_FILES: pb.CONTRIBUTOR_TYPE_WORKING_FILES,
    ContributorType.RETRIEVAL: pb.CONTRIBUTOR_TYPE_RETRIEVAL,
    ContributorType.CODEBASE_MAP: pb.CONTRIBUTOR_TYPE_CODEBASE_MAP,
    ContributorType.PROJECT_DOCS: pb.CONTRIBUTOR_TYPE_PROJECT_DOCS,
}
_TYPE_FROM_PROTO = {v: k for k, v in _TYPE_TO_PROTO.items()}


def from_proto_budget_patches(msgs: Iterable[pb.CategoryBudget]) -> dict[Category, BudgetPatch]:
    out: dict[Category, BudgetPatch] = {}
    for m in msgs:
        category = _CATEGORY_FROM_PROTO.get(m.category)
        if category is None:
            raise InvalidArgument(
                f"category_budgets: category {m.category} is not one of SYSTEM, CONTEXT, DIALOG,"
                " SYSTEM_OUTPUT"
            )
        if category in out:
            raise InvalidArgument(f"category_budgets: {category} is given twice")
        out[category] = BudgetPatch(
            m.share if m.HasField("share") else None,
            m.min_share if m.HasField("min_share") else None,
            m.max_share if m.HasField("max_share") else None,
        )
    return out


def from_proto_contributor_weights(
    msgs: Iterable[pb.ContributorWeight],
) -> dict[ContributorType, float]:
    out: dict[ContributorType, float] = {}
    for m in msgs:
        t = _TYPE_FROM_PROTO.get(m.type)
        if t is None:
            raise InvalidArgument(
                f"contributor_weights: type {m.type} is not one of WORKING_FILES, RETRIEVAL,"
                " CODEBASE_MAP, PROJECT_DOCS"
            )
        if t in out:
            raise InvalidArgument(f"contributor_weights: {t} is given twice")
        out[t] = m.weight
    return out


def from_proto_category_options(msg: pb.CategoryOptions) -> CategoryRequest:
    return CategoryRequest(
        budgets=from_proto_budget_patches(msg.budgets),
        contributor_weights=from_proto_contributor_weights(msg.contributor_weights),
        files=tuple(msg.files),
    )


def to_proto_budgets(budgets: Mapping[Category, CategoryBudget]) -> list[pb.CategoryBudget]:
    return [
        pb.CategoryBudget(
            category=_CATEGORY_TO_PROTO[c],
            share=budgets[c].share,
            min_share=budgets[c].min_share,
            max_share=budgets[c].max_share,
        )
        for c in Category
    ]


def to_proto_contributor_weights(
    weights: Mapping[ContributorType, float],
) -> list[pb.ContributorWeight]:
    return [
        pb.ContributorWeight(type=_TYPE_TO_PROTO[t], weight=weights[t]) for t in ContributorType
    ]


def to_proto_category(category: Category) -> pb.Category.ValueType:
    return _CATEGORY_TO_PROTO[category]


def _category_report(r: CategoryReport) -> pb.CategoryAllocation:
    return pb.CategoryAllocation(
        category=_CATEGORY_TO_PROTO[r.category],
        minimum=r.minimum,
        maximum=r.maximum,
        granted=r.granted,
        used=r.used,
        lent=r.lent,
        borrowed=r.borrowed,
    )


def to_proto_allocation(report: AllocationReport) -> pb.AllocationReport:
    return pb.AllocationReport(
        allocated=report.allocated,
        categories=[_category_report(r) for r in report.categories],
        contributors=[
            pb.ContributorPiece(
                type=_TYPE_TO_PROTO[o.contribution.type],
                source=o.contribution.source,
                chosen=o.chosen,
                weight=o.contribution.weight,
                salience=o.contribution.salience,
                score=o.contribution.score,
                tokens=o.contribution.tokens,
                detail=o.contribution.detail,
                reason=o.reason,
                content=o.contribution.text if o.chosen else "",
            )
            for o in report.contributors
        ],
    )
