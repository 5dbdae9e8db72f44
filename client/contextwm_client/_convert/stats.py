"""Converters of the statistics: a scope's conversations and its totals."""

from __future__ import annotations

from contextwm_client._convert.common import from_proto_timestamp
from contextwm_client._convert.workspace_files import from_proto_chunk_cache_stats
from contextwm_client._types import ConversationStats, StateStats, StatsResult, StoreStats
from contextwm_client.v1 import contextwm_pb2 as pb


def from_proto_state_stats(message: pb.StateStats) -> StateStats:
    """Converts a StateStats message to StateStats."""
    return StateStats(items=message.items, tokens=message.tokens)


def from_proto_store_stats(message: pb.StoreStats) -> StoreStats:
    """Converts a StoreStats message to StoreStats; unset item times become None."""
    m = message
    return StoreStats(
        items=m.items,
        tokens=m.tokens,
        window=from_proto_state_stats(m.window),
        archived=from_proto_state_stats(m.archived),
        compacted=from_proto_state_stats(m.compacted),
        reverted=from_proto_state_stats(m.reverted),
        vectors=m.vectors,
        missing_vectors=m.missing_vectors,
        index_bytes=m.index_bytes,
        oldest_item_at=from_proto_timestamp(m.oldest_item_at)
        if m.HasField("oldest_item_at")
        else None,
        newest_item_at=from_proto_timestamp(m.newest_item_at)
        if m.HasField("newest_item_at")
        else None,
    )


def from_proto_conversation_stats(message: pb.ConversationStats) -> ConversationStats:
    """Converts a ConversationStats message to ConversationStats."""
    return ConversationStats(
        namespace=message.namespace,
        conversation_id=message.conversation_id,
        stats=from_proto_store_stats(message.stats),
    )


def from_proto_get_stats_response(message: pb.GetStatsResponse) -> StatsResult:
    """Converts a GetStatsResponse to a StatsResult."""
    return StatsResult(
        conversations=tuple(from_proto_conversation_stats(c) for c in message.conversations),
        total=from_proto_store_stats(message.total),
        conversation_count=message.conversation_count,
        next_page_token=message.next_page_token,
        model=message.model,
        chunk_cache=from_proto_chunk_cache_stats(message.chunk_cache),
    )
