"""Converters of the agent loop: usage, active context, compactions, edits, checkpoints, events."""

from __future__ import annotations

from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.agent_loop.loop import ActivePage, ActiveView
from contextwm.domain.facts import Fact
from contextwm.domain.history import (
    Checkpoint,
    CheckpointChange,
    CompactionRecord,
    ContextEdit,
    Erased,
    Event,
    EventKind,
)
from contextwm.domain.usage import Usage
from contextwm.transport.conversations.convert import to_proto_file
from contextwm.transport.timestamps import to_proto_timestamp

__all__ = [
    "to_proto_active_context",
    "to_proto_checkpoint",
    "to_proto_compaction",
    "to_proto_edit",
    "to_proto_event",
    "to_proto_usage",
]


def to_proto_usage(u: Usage) -> pb.Usage:
    t = u.totals
    return pb.Usage(
        active_tokens=u.active_tokens,
        reported_tokens=u.reported_tokens,
        used_tokens=u.used_tokens,
        source=u.source,
        context_limit=u.limits.limit,
        reserved_reply_tokens=u.limits.reserved,
        usable_tokens=u.limits.usable,
        fill_ratio=u.fill_ratio,
        threshold=u.threshold,
        compaction_enabled=u.compaction_enabled,
        should_compact=u.should_compact,
        summary_request=u.summary_request,
        compactions=u.compactions,
        active_items=u.active_items,
        model=u.model,
        optimisations=pb.Optimisations(
            masked_items=t.masked_items,
            masked_tokens_saved=t.masked_saved,
            duplicate_reads=t.duplicate_items,
            duplicate_tokens_saved=t.duplicate_saved,
            truncated_items=t.truncated_items,
            truncated_tokens=t.truncated_tokens,
        ),
    )


def _to_proto_entry(view: ActiveView) -> pb.ActiveEntry:
    row, item = view.row, view.item
    msg = pb.ActiveEntry(
        seq=row.seq or 0,
        role=row.role,
        content=row.text if row.text is not None else (item.content if item else ""),
        token_count=row.tokens,
        original_tokens=row.original_tokens,
        treatment=row.treatment.value,
        kind=item.kind if item else "notice",
    )
    if item is not None:
        msg.timestamp.CopyFrom(to_proto_timestamp(item.timestamp))
        msg.metadata.update(item.metadata)
        if item.file is not None:
            msg.file.CopyFrom(to_proto_file(item.file))
    return msg


def to_proto_active_context(page: ActivePage) -> pb.ActiveContext:
    return pb.ActiveContext(
        entries=[_to_proto_entry(v) for v in page.views],
        next_page_token=page.next_page_token,
        total_entries=page.total_rows,
        total_tokens=page.usage.active_tokens,
        usage=to_proto_usage(page.usage),
    )


def _to_proto_fact(f: Fact) -> pb.LedgerFact:
    return pb.LedgerFact(kind=f.kind.value, text=f.text, seq=f.seq, outcome=f.outcome)


def to_proto_compaction(c: CompactionRecord) -> pb.Compaction:
    return pb.Compaction(
        number=c.number,
        created_at=to_proto_timestamp(c.at),
        summary=c.summary,
        extractive=c.extractive,
        marker_seq=c.marker_seq,
        items_archived=c.items_archived,
        tokens_before=c.tokens_before,
        tokens_after=c.tokens_after,
        ledger=c.ledger,
        facts=[_to_proto_fact(f) for f in c.facts],
        undone=c.undone_at is not None,
    )


def to_proto_edit(e: ContextEdit) -> pb.ContextEdit:
    msg = pb.ContextEdit(
        id=e.id,
        created_at=to_proto_timestamp(e.at),
        kind=e.kind.value,
        seqs=e.seqs,
        related_seq=e.related_seq,
        tokens_saved=e.tokens_saved,
        detail=e.detail,
    )
    if e.undone_at is not None:
        msg.undone_at.CopyFrom(to_proto_timestamp(e.undone_at))
    return msg


def to_proto_checkpoint(c: Checkpoint) -> pb.Checkpoint:
    return pb.Checkpoint(
        name=c.name,
        created_at=to_proto_timestamp(c.at),
        last_seq=c.last_seq,
        active_tokens=c.active_tokens,
        compactions=c.compactions,
    )


def to_proto_event(e: Event) -> pb.Event:
    msg = pb.Event(id=e.number, created_at=to_proto_timestamp(e.at), kind=e.kind.value)
    p = e.payload
    if isinstance(p, Usage):
        msg.usage.CopyFrom(to_proto_usage(p))
    elif isinstance(p, CompactionRecord):
        msg.compaction.CopyFrom(to_proto_compaction(p))
    elif isinstance(p, ContextEdit):
        msg.edit.CopyFrom(to_proto_edit(p))
    elif isinstance(p, CheckpointChange):
        msg.checkpoint.CopyFrom(
            pb.CheckpointEvent(
                checkpoint=to_proto_checkpoint(p.checkpoint), reverted_items=p.reverted_items
            )
        )
    elif isinstance(p, tuple):
        msg.eviction.CopyFrom(pb.Eviction(seqs=p))
    elif isinstance(p, Erased):
        msg.erasure.CopyFrom(pb.Erasure(seqs=p.seqs))
    elif e.kind is EventKind.GAP:
        msg.missed = p
    return msg
