"""Converters of erasure receipts."""

from __future__ import annotations

from contextwm_client._convert.common import from_proto_timestamp
from contextwm_client._types import ErasedConversation, ErasureCounts, ErasureReceipt
from contextwm_client.v1 import contextwm_pb2 as pb


def from_proto_erasure_receipt(message: pb.ErasureReceipt) -> ErasureReceipt:
    """Converts an ErasureReceipt message to an ErasureReceipt."""
    c = message.counts
    return ErasureReceipt(
        namespace=message.namespace,
        erased_at=from_proto_timestamp(message.erased_at),
        conversations=tuple(
            ErasedConversation(
                conversation_id=e.conversation_id,
                seqs=tuple((r.first, r.last) for r in e.seqs),
                deleted=e.deleted,
            )
            for e in message.conversations
        ),
        counts=ErasureCounts(
            items=c.items,
            tokens=c.tokens,
            vectors=c.vectors,
            postings=c.postings,
            index_entries=c.index_entries,
            namespace_index_entries=c.namespace_index_entries,
            compactions=c.compactions,
            summaries=c.summaries,
            markers=c.markers,
            facts=c.facts,
            checkpoints=c.checkpoints,
            edits=c.edits,
            events=c.events,
            sessions=c.sessions,
            chunk_cache_entries=c.chunk_cache_entries,
        ),
        digest=message.digest,
    )
