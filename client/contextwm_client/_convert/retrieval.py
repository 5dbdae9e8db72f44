"""Converters of the enhanced context and search: modes, scored items, tokens, time ranges."""

from __future__ import annotations

from contextwm_client._convert.budgets import (
    from_proto_allocation_report,
    from_proto_optional_category,
)
from contextwm_client._convert.common import by_name, enum_value, from_proto_timestamp
from contextwm_client._convert.conversations import from_proto_conversation_state, from_proto_item
from contextwm_client._types import (
    EnhancedContext,
    ScoredItem,
    ScoreParts,
    SearchResult,
    TimeRange,
    TokenAccount,
)
from contextwm_client._vocabulary import RetrievalMode
from contextwm_client.v1 import contextwm_pb2 as pb

_RETRIEVAL_MODE_PAIRS: tuple[tuple[RetrievalMode, pb.RetrievalMode.ValueType], ...] = (
    ("hybrid", pb.RETRIEVAL_MODE_HYBRID),
    ("dense", pb.RETRIEVAL_MODE_DENSE),
    ("lexical", pb.RETRIEVAL_MODE_LEXICAL),
)
_RETRIEVAL_MODES = by_name(_RETRIEVAL_MODE_PAIRS)


def to_proto_retrieval_mode(mode: str | None) -> pb.RetrievalMode.ValueType:
    """Converts "hybrid", "dense" or "lexical" to the enum; None leaves it to the server.

    Raises:
        ValueError: For any other name.
    """
    if mode is None:
        return pb.RETRIEVAL_MODE_UNSPECIFIED
    return enum_value(_RETRIEVAL_MODES, mode, "retrieval mode")


def from_proto_score_parts(message: pb.ScoreParts) -> ScoreParts:
    """Converts a ScoreParts message to ScoreParts."""
    return ScoreParts(
        recency=message.recency,
        importance=message.importance,
        similarity=message.similarity,
        lexical=message.lexical,
        role=message.role,
        time=message.time,
    )


def from_proto_scored_item(message: pb.ScoredItem) -> ScoredItem:
    """Converts a ScoredItem message to a ScoredItem."""
    return ScoredItem(
        item=from_proto_item(message.item),
        score=message.score,
        parts=from_proto_score_parts(message.parts),
        neighbor_of=message.neighbor_of or None,
        replaced=message.replaced,
        category=from_proto_optional_category(message.category),
    )


def from_proto_token_account(message: pb.TokenAccount) -> TokenAccount:
    """Converts a TokenAccount message to a TokenAccount."""
    return TokenAccount(
        budget=message.budget,
        total=message.total,
        recent=message.recent,
        history=message.history,
        query=message.query,
        recent_omitted=message.recent_omitted,
        encoding=message.encoding,
        system=message.system,
    )


def from_proto_time_range(message: pb.TimeRange) -> TimeRange:
    """Converts a TimeRange message to a TimeRange; an unset end becomes None."""
    return TimeRange(
        since=from_proto_timestamp(message.since) if message.HasField("since") else None,
        until=from_proto_timestamp(message.until) if message.HasField("until") else None,
        phrase=message.phrase,
    )


def from_proto_enhanced_context(message: pb.EnhancedContext) -> EnhancedContext:
    """Converts an EnhancedContext message to an EnhancedContext; no allocation is None."""
    return EnhancedContext(
        text=message.text,
        recent=tuple(from_proto_scored_item(s) for s in message.recent),
        history=tuple(from_proto_scored_item(s) for s in message.history),
        query=message.query,
        query_from_focus=message.query_from_focus,
        tokens=from_proto_token_account(message.tokens),
        time_range=from_proto_time_range(message.time_range)
        if message.HasField("time_range")
        else None,
        unindexed_items=message.unindexed_items,
        state=from_proto_conversation_state(message.state),
        allocation=from_proto_allocation_report(message.allocation)
        if message.HasField("allocation")
        else None,
    )


def from_proto_search_response(message: pb.SearchResponse) -> SearchResult:
    """Converts a SearchResponse to a SearchResult."""
    return SearchResult(
        hits=tuple(from_proto_scored_item(h) for h in message.hits),
        time_range=from_proto_time_range(message.time_range)
        if message.HasField("time_range")
        else None,
    )
