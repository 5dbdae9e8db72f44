"""Converters of conversations, their settings and items, and appends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, cast

from contextwm_client._convert.agent_loop import from_proto_compaction
from contextwm_client._convert.budgets import (
    from_proto_category_budget,
    from_proto_contributor_weights,
    to_proto_category_budgets,
    to_proto_contributor_weights,
)
from contextwm_client._convert.common import (
    UNSPECIFIED,
    as_flags,
    by_name,
    by_number,
    enum_value,
    from_proto_file_ref,
    from_proto_timestamp,
    if_set,
    to_proto_file_ref,
    to_proto_timestamp,
)
from contextwm_client._convert.retention import (
    from_proto_retention_policy,
    to_proto_retention_policy,
)
from contextwm_client._types import (
    AppendBatchResult,
    AppendedItem,
    AppendResult,
    Conversation,
    ConversationSettings,
    Item,
    NewItem,
    Page,
    ScoringWeights,
    WindowStats,
)
from contextwm_client._vocabulary import ConversationState, ItemKind, ItemState, Role, Unspecified
from contextwm_client.v1 import contextwm_pb2 as pb

_MESSAGE_KIND: Final = "message"

_ITEM_STATE_PAIRS: tuple[tuple[ItemState, pb.ItemState.ValueType], ...] = (
    ("window", pb.ITEM_STATE_WINDOW),
    ("archived", pb.ITEM_STATE_ARCHIVED),
    ("compacted", pb.ITEM_STATE_COMPACTED),
    ("reverted", pb.ITEM_STATE_REVERTED),
)
_CONVERSATION_STATE_PAIRS: tuple[tuple[ConversationState, pb.ConversationState.ValueType], ...] = (
    ("general", pb.CONVERSATION_STATE_GENERAL),
    ("coding", pb.CONVERSATION_STATE_CODING),
    ("debugging", pb.CONVERSATION_STATE_DEBUGGING),
    ("research", pb.CONVERSATION_STATE_RESEARCH),
)
_ITEM_STATES = by_name(_ITEM_STATE_PAIRS)
_ITEM_STATE_NAMES = by_number(_ITEM_STATE_PAIRS)
_CONVERSATION_STATE_NAMES = by_number(_CONVERSATION_STATE_PAIRS)


def to_proto_item_state(state: str) -> pb.ItemState.ValueType:
    """Converts "window", "archived", "compacted" or "reverted" to the enum.

    Raises:
        ValueError: For any other name.
    """
    return enum_value(_ITEM_STATES, state, "item state")


def from_proto_item_state(state: int) -> ItemState | Unspecified:
    """Converts the enum to its lower-case name ("unspecified" for values this client lacks)."""
    return _ITEM_STATE_NAMES.get(state, UNSPECIFIED)


def from_proto_conversation_state(state: int) -> ConversationState | Unspecified:
    """Converts the enum to its lower-case name ("unspecified" for values this client lacks)."""
    return _CONVERSATION_STATE_NAMES.get(state, UNSPECIFIED)


def to_proto_new_item(value: NewItem) -> pb.NewItem:
    """Converts an item to append to its message; None fields stay unset.

    Args:
        value: The item.

    Returns:
        The message.
    """
    message = pb.NewItem(
        role=value.role,
        content=value.content,
        flags=value.flags,
        metadata=value.metadata,
        idempotency_key=value.idempotency_key or "",
    )
    if value.timestamp is not None:
        message.timestamp.CopyFrom(to_proto_timestamp(value.timestamp))
    if value.file is not None:
        message.file.CopyFrom(to_proto_file_ref(value.file))
    return message


def from_proto_item(message: pb.Item) -> Item:
    """Converts an Item message to an Item (an empty kind, from an older server, is "message")."""
    return Item(
        conversation_id=message.conversation_id,
        seq=message.seq,
        role=cast("Role", message.role),
        content=message.content,
        timestamp=from_proto_timestamp(message.timestamp),
        token_count=message.token_count,
        flags=as_flags(message.flags),
        metadata=dict(message.metadata) if message.metadata else {},
        file=from_proto_file_ref(message.file) if message.HasField("file") else None,
        state=from_proto_item_state(message.state),
        kind=cast("ItemKind", message.kind or _MESSAGE_KIND),
        compaction=from_proto_compaction(message.compaction)
        if message.HasField("compaction")
        else None,
    )


def from_proto_window_stats(message: pb.WindowStats) -> WindowStats:
    """Converts a WindowStats message to WindowStats."""
    return WindowStats(
        item_count=message.item_count,
        token_count=message.token_count,
        token_limit=message.token_limit,
        item_limit=message.item_limit,
    )


def to_proto_scoring_weights(value: ScoringWeights) -> pb.ScoringWeights:
    """Converts ScoringWeights to its message; None fields stay unset."""
    return pb.ScoringWeights(
        recency=value.recency,
        similarity=value.similarity,
        importance=value.importance,
        role=value.role,
    )


def from_proto_scoring_weights(message: pb.ScoringWeights) -> ScoringWeights:
    """Converts a ScoringWeights message to ScoringWeights; unset fields become None."""
    return ScoringWeights(
        recency=message.recency if message.HasField("recency") else None,
        similarity=message.similarity if message.HasField("similarity") else None,
        importance=dict(message.importance),
        role=dict(message.role),
    )


def to_proto_conversation_settings(value: ConversationSettings) -> pb.ConversationSettings:
    """Converts settings to their message; None fields stay unset (server default/unchanged).

    Raises:
        ValueError: If a category or contributor type is unknown, or a category is given
            twice.
    """
    # Passing None for a proto3 optional field leaves it unset, which is what None means here.
    message = pb.ConversationSettings(
        window_max_tokens=value.window_max_tokens,
        window_max_items=value.window_max_items,
        encoding=value.encoding,
        recency_half_life_seconds=value.recency_half_life_seconds,
        recency_half_life_items=value.recency_half_life_items,
        focus_items=value.focus_items,
        similarity_threshold=value.similarity_threshold,
        recent_min_items=value.recent_min_items,
        protected_tail_items=value.protected_tail_items,
        protected_tail_share=value.protected_tail_share,
        adaptive_window=value.adaptive_window,
        detect_importance=value.detect_importance,
        model=value.model,
        context_limit=value.context_limit,
        reserved_reply_tokens=value.reserved_reply_tokens,
        compaction_threshold=value.compaction_threshold,
        compaction_enabled=value.compaction_enabled,
        mask_tool_outputs_after_turns=value.mask_tool_outputs_after_turns,
        replace_duplicate_reads=value.replace_duplicate_reads,
        workspace_root=value.workspace_root,
        category_budgets=to_proto_category_budgets(value.category_budgets or ()),
        contributor_weights=to_proto_contributor_weights(value.contributor_weights or {}),
    )
    if value.weights is not None:
        message.weights.CopyFrom(to_proto_scoring_weights(value.weights))
    if value.retention is not None:
        message.retention.CopyFrom(to_proto_retention_policy(value.retention))
    return message


def from_proto_conversation_settings(message: pb.ConversationSettings) -> ConversationSettings:
    """Converts a ConversationSettings message to settings; unset fields become None.

    Empty category budgets or contributor weights are unset too (a server sends all four).
    """
    m = message
    return ConversationSettings(
        window_max_tokens=if_set(m, "window_max_tokens", m.window_max_tokens),
        window_max_items=if_set(m, "window_max_items", m.window_max_items),
        encoding=if_set(m, "encoding", m.encoding),
        recency_half_life_seconds=if_set(
            m, "recency_half_life_seconds", m.recency_half_life_seconds
        ),
        recency_half_life_items=if_set(m, "recency_half_life_items", m.recency_half_life_items),
        focus_items=if_set(m, "focus_items", m.focus_items),
        similarity_threshold=if_set(m, "similarity_threshold", m.similarity_threshold),
        recent_min_items=if_set(m, "recent_min_items", m.recent_min_items),
        protected_tail_items=if_set(m, "protected_tail_items", m.protected_tail_items),
        protected_tail_share=if_set(m, "protected_tail_share", m.protected_tail_share),
        adaptive_window=if_set(m, "adaptive_window", m.adaptive_window),
        detect_importance=if_set(m, "detect_importance", m.detect_importance),
        weights=from_proto_scoring_weights(m.weights) if m.HasField("weights") else None,
        model=if_set(m, "model", m.model),
        context_limit=if_set(m, "context_limit", m.context_limit),
        reserved_reply_tokens=if_set(m, "reserved_reply_tokens", m.reserved_reply_tokens),
        compaction_threshold=if_set(m, "compaction_threshold", m.compaction_threshold),
        compaction_enabled=if_set(m, "compaction_enabled", m.compaction_enabled),
        mask_tool_outputs_after_turns=if_set(
            m, "mask_tool_outputs_after_turns", m.mask_tool_outputs_after_turns
        ),
        replace_duplicate_reads=if_set(m, "replace_duplicate_reads", m.replace_duplicate_reads),
        workspace_root=if_set(m, "workspace_root", m.workspace_root),
        category_budgets=tuple(from_proto_category_budget(b) for b in m.category_budgets) or None,
        contributor_weights=from_proto_contributor_weights(m.contributor_weights) or None,
        retention=from_proto_retention_policy(m.retention) if m.HasField("retention") else None,
    )


def from_proto_conversation(message: pb.Conversation) -> Conversation:
    """Converts a Conversation message to a Conversation."""
    return Conversation(
        namespace=message.namespace,
        conversation_id=message.conversation_id,
        settings=from_proto_conversation_settings(message.settings),
        window=from_proto_window_stats(message.window),
        archived_items=message.archived_items,
        total_items=message.total_items,
        state=from_proto_conversation_state(message.state),
        created_at=from_proto_timestamp(message.created_at),
        last_item_at=from_proto_timestamp(message.last_item_at)
        if message.HasField("last_item_at")
        else None,
        last_seq=message.last_seq,
        pending_embeddings=message.pending_embeddings,
        last_event_id=message.last_event_id,
    )


def from_proto_list_conversations_response(
    message: pb.ListConversationsResponse,
) -> Page[Conversation]:
    """Converts a ListConversationsResponse to a page of conversations."""
    return Page(
        entries=tuple(from_proto_conversation(c) for c in message.conversations),
        next_page_token=message.next_page_token,
    )


def from_proto_list_items_response(message: pb.ListItemsResponse) -> Page[Item]:
    """Converts a ListItemsResponse to a page of items."""
    return Page(
        entries=tuple(from_proto_item(i) for i in message.items),
        next_page_token=message.next_page_token,
    )


def from_proto_append_result(message: pb.AppendResult) -> AppendedItem:
    """Converts an AppendResult message to the outcome for one appended item."""
    return AppendedItem(
        seq=message.seq,
        token_count=message.token_count,
        flags=as_flags(message.flags),
        duplicate=message.duplicate,
        out_of_order=message.out_of_order,
    )


def from_proto_append_response(message: pb.AppendResponse) -> AppendResult:
    """Converts an AppendResponse to the outcome of a single append."""
    return AppendResult(
        seq=message.result.seq,
        token_count=message.result.token_count,
        flags=as_flags(message.result.flags),
        duplicate=message.result.duplicate,
        evicted_seqs=tuple(message.evicted_seqs),
        window=from_proto_window_stats(message.window),
        out_of_order=message.result.out_of_order,
    )


def from_proto_append_batch_response(message: pb.AppendBatchResponse) -> AppendBatchResult:
    """Converts an AppendBatchResponse to the outcome of a batch append."""
    return AppendBatchResult(
        results=tuple(from_proto_append_result(r) for r in message.results),
        evicted_seqs=tuple(message.evicted_seqs),
        window=from_proto_window_stats(message.window),
    )


def joined_batch_results(results: Sequence[AppendBatchResult]) -> AppendBatchResult:
    """The outcome of a batch sent as several calls, in order: every item's result, every
    eviction, and the window after the last call."""
    return AppendBatchResult(
        results=tuple(r for batch in results for r in batch.results),
        evicted_seqs=tuple(s for batch in results for s in batch.evicted_seqs),
        window=results[-1].window,
    )
