"""The converters the clients do not need: responses built from values, requests read back.

The client only builds requests and reads responses (`contextwm_client._convert`); these are
the other directions, for round-trip tests and for fakes that answer with real messages.
The server has converters of its own (`contextwm.transport`), from its core values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from contextwm_client._convert.budgets import (
    from_proto_category_budget,
    from_proto_contributor_weights,
    to_proto_category,
    to_proto_contributor_type,
)
from contextwm_client._convert.common import (
    enum_value,
    from_proto_file_ref,
    from_proto_timestamp,
    to_proto_file_ref,
    to_proto_timestamp,
)
from contextwm_client._convert.conversations import (
    _CONVERSATION_STATE_PAIRS,
    to_proto_conversation_settings,
    to_proto_item_state,
)
from contextwm_client._types import (
    ActiveContext,
    ActiveEntry,
    AllocationReport,
    AppendBatchResult,
    AppendedItem,
    AppendResult,
    CategoryAllocation,
    CategoryOptions,
    Checkpoint,
    Compaction,
    CompactResult,
    ContextEdit,
    ContributorPiece,
    Conversation,
    EnhancedContext,
    Event,
    Item,
    LedgerFact,
    NewItem,
    Optimisations,
    Page,
    RestoreResult,
    ScoredItem,
    ScoreParts,
    SearchResult,
    TimeRange,
    TokenAccount,
    TruncateResult,
    Usage,
    WindowStats,
)
from contextwm_client._vocabulary import Flag, Role
from contextwm_client.v1 import contextwm_pb2 as pb


def to_proto_conversation_state(state: str) -> pb.ConversationState.ValueType:
    """Converts "general", "coding", "debugging" or "research" to the enum.

    Raises:
        ValueError: For any other name.
    """
    return enum_value(dict(_CONVERSATION_STATE_PAIRS), state, "conversation state")


def from_proto_new_item(message: pb.NewItem) -> NewItem:
    """Converts a NewItem message back to a NewItem; unset fields become None."""
    return NewItem(
        content=message.content,
        role=cast("Role", message.role),
        timestamp=from_proto_timestamp(message.timestamp)
        if message.HasField("timestamp")
        else None,
        flags=cast("tuple[Flag, ...]", tuple(message.flags)),
        metadata=dict(message.metadata),
        file=from_proto_file_ref(message.file) if message.HasField("file") else None,
        idempotency_key=message.idempotency_key or None,
    )


def to_proto_item(value: Item) -> pb.Item:
    """Converts a stored item to its message.

    Raises:
        ValueError: If the state is not a known item state.
    """
    message = pb.Item(
        conversation_id=value.conversation_id,
        seq=value.seq,
        role=value.role,
        content=value.content,
        timestamp=to_proto_timestamp(value.timestamp),
        token_count=value.token_count,
        flags=value.flags,
        metadata=value.metadata,
        state=to_proto_item_state(value.state),
        kind=value.kind,
    )
    if value.file is not None:
        message.file.CopyFrom(to_proto_file_ref(value.file))
    if value.compaction is not None:
        message.compaction.CopyFrom(to_proto_compaction(value.compaction))
    return message


def to_proto_score_parts(value: ScoreParts) -> pb.ScoreParts:
    """Converts ScoreParts to its message."""
    return pb.ScoreParts(
        recency=value.recency,
        importance=value.importance,
        similarity=value.similarity,
        lexical=value.lexical,
        role=value.role,
        time=value.time,
    )


def to_proto_scored_item(value: ScoredItem) -> pb.ScoredItem:
    """Converts a ScoredItem to its message (neighbor_of None is sent as 0: seqs start at 1)."""
    return pb.ScoredItem(
        item=to_proto_item(value.item),
        score=value.score,
        parts=to_proto_score_parts(value.parts),
        neighbor_of=value.neighbor_of or 0,
        replaced=value.replaced,
    )


def from_proto_category_options(message: pb.CategoryOptions) -> CategoryOptions:
    """Converts a CategoryOptions message to CategoryOptions."""
    return CategoryOptions(
        budgets=tuple(from_proto_category_budget(b) for b in message.budgets),
        contributor_weights=from_proto_contributor_weights(message.contributor_weights),
        files=tuple(message.files),
    )


def to_proto_category_allocation(value: CategoryAllocation) -> pb.CategoryAllocation:
    """Converts a CategoryAllocation to its message.

    Raises:
        ValueError: If the category is not a known category.
    """
    return pb.CategoryAllocation(
        category=to_proto_category(value.category),
        minimum=value.minimum,
        maximum=value.maximum,
        granted=value.granted,
        used=value.used,
        lent=value.lent,
        borrowed=value.borrowed,
    )


def to_proto_contributor_piece(value: ContributorPiece) -> pb.ContributorPiece:
    """Converts a ContributorPiece to its message.

    Raises:
        ValueError: If the type is not a known contributor type.
    """
    return pb.ContributorPiece(
        type=to_proto_contributor_type(value.type),
        source=value.source,
        chosen=value.chosen,
        weight=value.weight,
        salience=value.salience,
        score=value.score,
        tokens=value.tokens,
        detail=value.detail,
        reason=value.reason,
        content=value.content,
    )


def to_proto_allocation_report(value: AllocationReport) -> pb.AllocationReport:
    """Converts an AllocationReport to its message.

    Raises:
        ValueError: If a category or contributor type is unknown.
    """
    return pb.AllocationReport(
        allocated=value.allocated,
        categories=[to_proto_category_allocation(c) for c in value.categories],
        contributors=[to_proto_contributor_piece(c) for c in value.contributors],
    )


def to_proto_window_stats(value: WindowStats) -> pb.WindowStats:
    """Converts WindowStats to its message."""
    return pb.WindowStats(
        item_count=value.item_count,
        token_count=value.token_count,
        token_limit=value.token_limit,
        item_limit=value.item_limit,
    )


def to_proto_conversation(value: Conversation) -> pb.Conversation:
    """Converts a Conversation to its message.

    Raises:
        ValueError: If the state is not a known conversation state.
    """
    message = pb.Conversation(
        namespace=value.namespace,
        conversation_id=value.conversation_id,
        settings=to_proto_conversation_settings(value.settings),
        window=to_proto_window_stats(value.window),
        archived_items=value.archived_items,
        total_items=value.total_items,
        state=to_proto_conversation_state(value.state),
        created_at=to_proto_timestamp(value.created_at),
        last_seq=value.last_seq,
        pending_embeddings=value.pending_embeddings,
    )
    if value.last_item_at is not None:
        message.last_item_at.CopyFrom(to_proto_timestamp(value.last_item_at))
    return message


def to_proto_list_conversations_response(
    value: Page[Conversation],
) -> pb.ListConversationsResponse:
    """Converts a page of conversations to its message."""
    return pb.ListConversationsResponse(
        conversations=[to_proto_conversation(c) for c in value.entries],
        next_page_token=value.next_page_token,
    )


def to_proto_list_items_response(value: Page[Item]) -> pb.ListItemsResponse:
    """Converts a page of items to its message."""
    return pb.ListItemsResponse(
        items=[to_proto_item(i) for i in value.entries], next_page_token=value.next_page_token
    )


def to_proto_append_result(value: AppendedItem) -> pb.AppendResult:
    """Converts the outcome for one appended item to its message."""
    return pb.AppendResult(
        seq=value.seq, token_count=value.token_count, flags=value.flags, duplicate=value.duplicate
    )


def to_proto_append_response(value: AppendResult) -> pb.AppendResponse:
    """Converts the outcome of a single append to its response message."""
    return pb.AppendResponse(
        result=pb.AppendResult(
            seq=value.seq,
            token_count=value.token_count,
            flags=value.flags,
            duplicate=value.duplicate,
        ),
        evicted_seqs=value.evicted_seqs,
        window=to_proto_window_stats(value.window),
    )


def to_proto_append_batch_response(value: AppendBatchResult) -> pb.AppendBatchResponse:
    """Converts the outcome of a batch append to its response message."""
    return pb.AppendBatchResponse(
        results=[to_proto_append_result(r) for r in value.results],
        evicted_seqs=value.evicted_seqs,
        window=to_proto_window_stats(value.window),
    )


def to_proto_token_account(value: TokenAccount) -> pb.TokenAccount:
    """Converts a TokenAccount to its message."""
    return pb.TokenAccount(
        budget=value.budget,
        total=value.total,
        recent=value.recent,
        history=value.history,
        query=value.query,
        recent_omitted=value.recent_omitted,
        encoding=value.encoding,
        system=value.system,
    )


def to_proto_time_range(value: TimeRange) -> pb.TimeRange:
    """Converts a TimeRange to its message; an open end stays unset."""
    message = pb.TimeRange(phrase=value.phrase)
    if value.since is not None:
        message.since.CopyFrom(to_proto_timestamp(value.since))
    if value.until is not None:
        message.until.CopyFrom(to_proto_timestamp(value.until))
    return message


def to_proto_enhanced_context(value: EnhancedContext) -> pb.EnhancedContext:
    """Converts an EnhancedContext to its message.

    Raises:
        ValueError: If a state, category or contributor type is unknown.
    """
    message = pb.EnhancedContext(
        recent=[to_proto_scored_item(s) for s in value.recent],
        history=[to_proto_scored_item(s) for s in value.history],
        text=value.text,
        query=value.query,
        query_from_focus=value.query_from_focus,
        tokens=to_proto_token_account(value.tokens),
        unindexed_items=value.unindexed_items,
        state=to_proto_conversation_state(value.state),
    )
    if value.time_range is not None:
        message.time_range.CopyFrom(to_proto_time_range(value.time_range))
    if value.allocation is not None:
        message.allocation.CopyFrom(to_proto_allocation_report(value.allocation))
    return message


def to_proto_search_response(value: SearchResult) -> pb.SearchResponse:
    """Converts a SearchResult to its response message."""
    message = pb.SearchResponse(hits=[to_proto_scored_item(h) for h in value.hits])
    if value.time_range is not None:
        message.time_range.CopyFrom(to_proto_time_range(value.time_range))
    return message


def to_proto_optimisations(value: Optimisations) -> pb.Optimisations:
    """Converts Optimisations to its message."""
    return pb.Optimisations(
        masked_items=value.masked_items,
        masked_tokens_saved=value.masked_tokens_saved,
        duplicate_reads=value.duplicate_reads,
        duplicate_tokens_saved=value.duplicate_tokens_saved,
        truncated_items=value.truncated_items,
        truncated_tokens=value.truncated_tokens,
    )


def to_proto_usage(value: Usage) -> pb.Usage:
    """Converts a Usage to its message."""
    return pb.Usage(
        active_tokens=value.active_tokens,
        reported_tokens=value.reported_tokens,
        used_tokens=value.used_tokens,
        source=value.source,
        context_limit=value.context_limit,
        reserved_reply_tokens=value.reserved_reply_tokens,
        usable_tokens=value.usable_tokens,
        fill_ratio=value.fill_ratio,
        threshold=value.threshold,
        compaction_enabled=value.compaction_enabled,
        should_compact=value.should_compact,
        summary_request=value.summary_request,
        compactions=value.compactions,
        active_items=value.active_items,
        model=value.model,
        optimisations=to_proto_optimisations(value.optimisations),
    )


def to_proto_active_entry(value: ActiveEntry) -> pb.ActiveEntry:
    """Converts an ActiveEntry to its message; a None timestamp or file stays unset."""
    message = pb.ActiveEntry(
        seq=value.seq,
        role=value.role,
        content=value.content,
        token_count=value.token_count,
        original_tokens=value.original_tokens,
        treatment=value.treatment,
        kind=value.kind,
        metadata=value.metadata,
    )
    if value.timestamp is not None:
        message.timestamp.CopyFrom(to_proto_timestamp(value.timestamp))
    if value.file is not None:
        message.file.CopyFrom(to_proto_file_ref(value.file))
    return message


def to_proto_active_context(value: ActiveContext) -> pb.ActiveContext:
    """Converts a page of the active context to its message."""
    return pb.ActiveContext(
        entries=[to_proto_active_entry(e) for e in value.entries],
        next_page_token=value.next_page_token,
        total_entries=value.total_entries,
        total_tokens=value.total_tokens,
        usage=to_proto_usage(value.usage),
    )


def to_proto_ledger_fact(value: LedgerFact) -> pb.LedgerFact:
    """Converts a LedgerFact to its message."""
    return pb.LedgerFact(kind=value.kind, text=value.text, seq=value.seq, outcome=value.outcome)


def to_proto_compaction(value: Compaction) -> pb.Compaction:
    """Converts a Compaction to its message."""
    return pb.Compaction(
        number=value.number,
        created_at=to_proto_timestamp(value.created_at),
        summary=value.summary,
        extractive=value.extractive,
        marker_seq=value.marker_seq,
        items_archived=value.items_archived,
        tokens_before=value.tokens_before,
        tokens_after=value.tokens_after,
        ledger=value.ledger,
        facts=[to_proto_ledger_fact(f) for f in value.facts],
        undone=value.undone,
    )


def to_proto_compact_response(value: CompactResult) -> pb.CompactResponse:
    """Converts the outcome of a compaction to its response message."""
    return pb.CompactResponse(
        compaction=to_proto_compaction(value.compaction), usage=to_proto_usage(value.usage)
    )


def to_proto_truncate_response(value: TruncateResult) -> pb.TruncateResponse:
    """Converts the outcome of a truncation to its response message."""
    return pb.TruncateResponse(
        truncated_seqs=value.truncated_seqs,
        tokens_removed=value.tokens_removed,
        usage=to_proto_usage(value.usage),
    )


def to_proto_checkpoint(value: Checkpoint) -> pb.Checkpoint:
    """Converts a Checkpoint to its message."""
    return pb.Checkpoint(
        name=value.name,
        created_at=to_proto_timestamp(value.created_at),
        last_seq=value.last_seq,
        active_tokens=value.active_tokens,
        compactions=value.compactions,
    )


def to_proto_list_checkpoints_response(
    value: Sequence[Checkpoint],
) -> pb.ListCheckpointsResponse:
    """Converts a list of checkpoints to its response message."""
    return pb.ListCheckpointsResponse(checkpoints=[to_proto_checkpoint(c) for c in value])


def to_proto_restore_checkpoint_response(value: RestoreResult) -> pb.RestoreCheckpointResponse:
    """Converts the outcome of a restore to its response message."""
    return pb.RestoreCheckpointResponse(
        checkpoint=to_proto_checkpoint(value.checkpoint),
        reverted_items=value.reverted_items,
        undone_edits=value.undone_edits,
        usage=to_proto_usage(value.usage),
    )


def to_proto_context_edit(value: ContextEdit) -> pb.ContextEdit:
    """Converts a ContextEdit to its message; undone_at None stays unset."""
    message = pb.ContextEdit(
        id=value.id,
        created_at=to_proto_timestamp(value.created_at),
        kind=value.kind,
        seqs=value.seqs,
        related_seq=value.related_seq,
        tokens_saved=value.tokens_saved,
        detail=value.detail,
    )
    if value.undone_at is not None:
        message.undone_at.CopyFrom(to_proto_timestamp(value.undone_at))
    return message


def to_proto_list_context_edits_response(
    value: Page[ContextEdit],
) -> pb.ListContextEditsResponse:
    """Converts a page of context edits to its message."""
    return pb.ListContextEditsResponse(
        edits=[to_proto_context_edit(e) for e in value.entries],
        next_page_token=value.next_page_token,
    )


def to_proto_event(value: Event) -> pb.Event:
    """Converts an Event to its message, setting the one payload part the event carries.

    The payload is a oneof: the first part set (usage, compaction, edit, checkpoint, eviction
    seqs, missed) is sent. An eviction without seqs or a gap without a count is still sent
    as that part when the kind names it, so the part survives a round trip.
    """
    message = pb.Event(
        id=value.id, created_at=to_proto_timestamp(value.created_at), kind=value.kind
    )
    if value.usage is not None:
        message.usage.CopyFrom(to_proto_usage(value.usage))
    elif value.compaction is not None:
        message.compaction.CopyFrom(to_proto_compaction(value.compaction))
    elif value.edit is not None:
        message.edit.CopyFrom(to_proto_context_edit(value.edit))
    elif value.checkpoint is not None:
        message.checkpoint.CopyFrom(
            pb.CheckpointEvent(
                checkpoint=to_proto_checkpoint(value.checkpoint),
                reverted_items=value.reverted_items,
            )
        )
    elif value.eviction_seqs or value.kind == "eviction":
        message.eviction.CopyFrom(pb.Eviction(seqs=value.eviction_seqs))
    elif value.missed or value.kind == "gap":
        message.missed = value.missed
    return message
