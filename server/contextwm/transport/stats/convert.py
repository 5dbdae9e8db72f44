"""Converters of the statistics messages: a scope's conversations and its totals."""

from __future__ import annotations

from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.conversations.stats import StatsPage
from contextwm.domain.stats import ConversationStats, StateStats, StoreStats
from contextwm.transport.timestamps import to_proto_timestamp

__all__ = ["to_proto_get_stats_response", "to_proto_store_stats"]


def _to_proto_state_stats(stats: StateStats) -> pb.StateStats:
    return pb.StateStats(items=stats.items, tokens=stats.tokens)


def to_proto_store_stats(stats: StoreStats) -> pb.StoreStats:
    message = pb.StoreStats(
        items=stats.items,
        tokens=stats.tokens,
        window=_to_proto_state_stats(stats.window),
        archived=_to_proto_state_stats(stats.archived),
        compacted=_to_proto_state_stats(stats.compacted),
        reverted=_to_proto_state_stats(stats.reverted),
        vectors=stats.vectors,
        missing_vectors=stats.missing_vectors,
        index_bytes=stats.index_bytes,
    )
    if stats.oldest is not None:
        message.oldest_item_at.CopyFrom(to_proto_timestamp(stats.oldest))
    if stats.newest is not None:
        message.newest_item_at.CopyFrom(to_proto_timestamp(stats.newest))
    return message


def _to_proto_conversation_stats(row: ConversationStats) -> pb.ConversationStats:
    return pb.ConversationStats(
        namespace=row.namespace,
        conversation_id=row.conversation_id,
        stats=to_proto_store_stats(row.stats),
    )


def to_proto_get_stats_response(page: StatsPage) -> pb.GetStatsResponse:
    return pb.GetStatsResponse(
        conversations=[_to_proto_conversation_stats(c) for c in page.conversations],
        total=to_proto_store_stats(page.total),
        conversation_count=page.conversation_count,
        next_page_token=page.next_page_token,
        model=page.model,
    )
