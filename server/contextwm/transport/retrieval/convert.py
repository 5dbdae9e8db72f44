"""Converters of the enhanced context and search: scored items, tokens, time ranges, filters."""

from __future__ import annotations

from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.budgets.assembly import AllocationReport
from contextwm.domain.categories import category_of_role
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.items import ItemFilter, ScoredItem, parse_flags
from contextwm.retrieval.pipeline import TokenAccount
from contextwm.retrieval.requests import EnhancedContext
from contextwm.retrieval.timehints import TimeHint
from contextwm.transport.budgets.convert import to_proto_allocation, to_proto_category
from contextwm.transport.conversations.convert import ITEM_MESSAGES, to_proto_conversation_state
from contextwm.transport.timestamps import from_proto_timestamp, to_proto_datetime

__all__ = [
    "from_proto_filter",
    "from_proto_mode",
    "to_proto_context",
    "to_proto_scored",
    "to_proto_time_range",
    "to_proto_tokens",
]

_MODES: dict[int, str] = {
    pb.RETRIEVAL_MODE_UNSPECIFIED: "hybrid",
    pb.RETRIEVAL_MODE_HYBRID: "hybrid",
    pb.RETRIEVAL_MODE_DENSE: "dense",
    pb.RETRIEVAL_MODE_LEXICAL: "lexical",
}


def to_proto_scored(s: ScoredItem) -> pb.ScoredItem:
    p = s.parts
    return pb.ScoredItem(
        item=ITEM_MESSAGES.message(s.item),
        score=s.score,
        parts=pb.ScoreParts(
            recency=p.recency,
            importance=p.importance,
            similarity=p.similarity,
            lexical=p.lexical,
            role=p.role,
            time=p.time,
        ),
        neighbor_of=s.neighbor_of or 0,
        replaced=s.replaced,
    )


def to_proto_time_range(hint: TimeHint | None) -> pb.TimeRange | None:
    if hint is None:
        return None
    msg = pb.TimeRange(phrase=hint.phrase)
    if hint.since is not None:
        msg.since.CopyFrom(to_proto_datetime(hint.since))
    if hint.until is not None:
        msg.until.CopyFrom(to_proto_datetime(hint.until))
    return msg


def to_proto_tokens(t: TokenAccount) -> pb.TokenAccount:
    return pb.TokenAccount(
        budget=t.budget,
        total=t.total,
        recent=t.recent,
        history=t.history,
        query=t.query,
        recent_omitted=t.recent_omitted,
        encoding=t.encoding,
        system=t.system,
    )


def to_proto_context(
    ctx: EnhancedContext, allocation: AllocationReport | None = None
) -> pb.EnhancedContext:
    recent = [to_proto_scored(s) for s in ctx.recent]
    history = [to_proto_scored(s) for s in ctx.history]
    if allocation is not None:
        for msg in recent:
            msg.category = to_proto_category(category_of_role(msg.item.role))
        for msg in history:
            msg.category = pb.CATEGORY_CONTEXT
    return pb.EnhancedContext(
        recent=recent,
        history=history,
        text=ctx.text,
        query=ctx.query,
        query_from_focus=ctx.query_from_focus,
        tokens=to_proto_tokens(ctx.tokens),
        time_range=to_proto_time_range(ctx.time_hint),
        unindexed_items=ctx.unindexed_items,
        state=to_proto_conversation_state(ctx.state),
        allocation=to_proto_allocation(allocation) if allocation else None,
    )


def from_proto_mode(mode: int) -> str:
    try:
        return _MODES[mode]
    except KeyError:
        raise InvalidArgument(f"unknown retrieval mode {mode}") from None


def from_proto_filter(msg: pb.SearchFilter) -> ItemFilter:
    return ItemFilter(
        roles=frozenset(msg.roles),
        flags=parse_flags(msg.flags),
        since=from_proto_timestamp(msg.since) if msg.HasField("since") else None,
        until=from_proto_timestamp(msg.until) if msg.HasField("until") else None,
        metadata=dict(msg.metadata),
    )
