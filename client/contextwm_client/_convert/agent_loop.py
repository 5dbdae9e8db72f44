"""Converters of the agent loop: usage, active context, compactions, checkpoints, edits, events."""

from __future__ import annotations

from typing import cast

from contextwm_client._convert.common import from_proto_file_ref, from_proto_timestamp
from contextwm_client._types import (
    ActiveContext,
    ActiveEntry,
    Checkpoint,
    Compaction,
    CompactResult,
    ContextEdit,
    Event,
    LedgerFact,
    Optimisations,
    Page,
    RestoreResult,
    TruncateResult,
    Usage,
)
from contextwm_client._vocabulary import (
    EditKind,
    EventKind,
    FactKind,
    ItemKind,
    Role,
    Treatment,
    UsageSource,
)
from contextwm_client.v1 import contextwm_pb2 as pb


def from_proto_optimisations(message: pb.Optimisations) -> Optimisations:
    """Converts an Optimisations message to Optimisations."""
    return Optimisations(
        masked_items=message.masked_items,
        masked_tokens_saved=message.masked_tokens_saved,
        duplicate_reads=message.duplicate_reads,
        duplicate_tokens_saved=message.duplicate_tokens_saved,
        truncated_items=message.truncated_items,
        truncated_tokens=message.truncated_tokens,
    )


def from_proto_usage(message: pb.Usage) -> Usage:
    """Converts a Usage message to a Usage."""
    return Usage(
        active_tokens=message.active_tokens,
        reported_tokens=message.reported_tokens,
        used_tokens=message.used_tokens,
        source=cast("UsageSource", message.source),
        context_limit=message.context_limit,
        reserved_reply_tokens=message.reserved_reply_tokens,
        usable_tokens=message.usable_tokens,
        fill_ratio=message.fill_ratio,
        threshold=message.threshold,
        compaction_enabled=message.compaction_enabled,
        should_compact=message.should_compact,
        summary_request=message.summary_request,
        compactions=message.compactions,
        active_items=message.active_items,
        model=message.model,
        optimisations=from_proto_optimisations(message.optimisations),
    )


def from_proto_active_entry(message: pb.ActiveEntry) -> ActiveEntry:
    """Converts an ActiveEntry message to an ActiveEntry; unset timestamp and file are None."""
    return ActiveEntry(
        seq=message.seq,
        role=cast("Role", message.role),
        content=message.content,
        token_count=message.token_count,
        original_tokens=message.original_tokens,
        treatment=cast("Treatment", message.treatment),
        kind=cast("ItemKind", message.kind),
        timestamp=from_proto_timestamp(message.timestamp)
        if message.HasField("timestamp")
        else None,
        metadata=dict(message.metadata),
        file=from_proto_file_ref(message.file) if message.HasField("file") else None,
    )


def from_proto_active_context(message: pb.ActiveContext) -> ActiveContext:
    """Converts an ActiveContext message to a page of the active context."""
    return ActiveContext(
        entries=tuple(from_proto_active_entry(e) for e in message.entries),
        next_page_token=message.next_page_token,
        total_entries=message.total_entries,
        total_tokens=message.total_tokens,
        usage=from_proto_usage(message.usage),
    )


def from_proto_ledger_fact(message: pb.LedgerFact) -> LedgerFact:
    """Converts a LedgerFact message to a LedgerFact."""
    return LedgerFact(
        kind=cast("FactKind", message.kind),
        text=message.text,
        seq=message.seq,
        outcome=message.outcome,
    )


def from_proto_compaction(message: pb.Compaction) -> Compaction:
    """Converts a Compaction message to a Compaction."""
    return Compaction(
        number=message.number,
        created_at=from_proto_timestamp(message.created_at),
        summary=message.summary,
        extractive=message.extractive,
        marker_seq=message.marker_seq,
        items_archived=message.items_archived,
        tokens_before=message.tokens_before,
        tokens_after=message.tokens_after,
        ledger=message.ledger,
        facts=tuple(from_proto_ledger_fact(f) for f in message.facts),
        undone=message.undone,
    )


def from_proto_compact_response(message: pb.CompactResponse) -> CompactResult:
    """Converts a CompactResponse to the outcome of a compaction."""
    return CompactResult(
        compaction=from_proto_compaction(message.compaction),
        usage=from_proto_usage(message.usage),
    )


def from_proto_truncate_response(message: pb.TruncateResponse) -> TruncateResult:
    """Converts a TruncateResponse to the outcome of a truncation."""
    return TruncateResult(
        truncated_seqs=tuple(message.truncated_seqs),
        tokens_removed=message.tokens_removed,
        usage=from_proto_usage(message.usage),
    )


def from_proto_checkpoint(message: pb.Checkpoint) -> Checkpoint:
    """Converts a Checkpoint message to a Checkpoint."""
    return Checkpoint(
        name=message.name,
        created_at=from_proto_timestamp(message.created_at),
        last_seq=message.last_seq,
        active_tokens=message.active_tokens,
        compactions=message.compactions,
    )


def from_proto_list_checkpoints_response(
    message: pb.ListCheckpointsResponse,
) -> list[Checkpoint]:
    """Converts a ListCheckpointsResponse to a list of checkpoints, oldest first."""
    return [from_proto_checkpoint(c) for c in message.checkpoints]


def from_proto_restore_checkpoint_response(
    message: pb.RestoreCheckpointResponse,
) -> RestoreResult:
    """Converts a RestoreCheckpointResponse to the outcome of a restore."""
    return RestoreResult(
        checkpoint=from_proto_checkpoint(message.checkpoint),
        reverted_items=message.reverted_items,
        undone_edits=message.undone_edits,
        usage=from_proto_usage(message.usage),
    )


def from_proto_context_edit(message: pb.ContextEdit) -> ContextEdit:
    """Converts a ContextEdit message to a ContextEdit; an unset undone_at becomes None."""
    return ContextEdit(
        id=message.id,
        created_at=from_proto_timestamp(message.created_at),
        kind=cast("EditKind", message.kind),
        seqs=tuple(message.seqs),
        related_seq=message.related_seq,
        tokens_saved=message.tokens_saved,
        detail=message.detail,
        undone_at=from_proto_timestamp(message.undone_at)
        if message.HasField("undone_at")
        else None,
    )


def from_proto_list_context_edits_response(
    message: pb.ListContextEditsResponse,
) -> Page[ContextEdit]:
    """Converts a ListContextEditsResponse to a page of context edits."""
    return Page(
        entries=tuple(from_proto_context_edit(e) for e in message.edits),
        next_page_token=message.next_page_token,
    )


def from_proto_event(message: pb.Event) -> Event:
    """Converts an Event message to an Event; the parts its payload does not set are empty."""
    payload = message.WhichOneof("payload")
    checkpoint_event = message.checkpoint if payload == "checkpoint" else None
    return Event(
        id=message.id,
        created_at=from_proto_timestamp(message.created_at),
        kind=cast("EventKind", message.kind),
        usage=from_proto_usage(message.usage) if payload == "usage" else None,
        eviction_seqs=tuple(message.eviction.seqs) if payload == "eviction" else (),
        compaction=from_proto_compaction(message.compaction) if payload == "compaction" else None,
        edit=from_proto_context_edit(message.edit) if payload == "edit" else None,
        checkpoint=from_proto_checkpoint(checkpoint_event.checkpoint)
        if checkpoint_event is not None
        else None,
        reverted_items=checkpoint_event.reverted_items if checkpoint_event is not None else 0,
        missed=message.missed if payload == "missed" else 0,
        erased_seqs=tuple(message.erasure.seqs) if payload == "erasure" else (),
    )
