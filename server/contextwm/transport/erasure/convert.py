"""Erasure requests and receipts between proto and domain values."""

from __future__ import annotations

import dataclasses

from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.domain.erasure import ErasureReceipt, forget_filter
from contextwm.domain.items import ItemFilter
from contextwm.transport.timestamps import from_proto_timestamp, to_proto_timestamp

__all__ = ["from_proto_forget", "to_proto_receipt"]


def from_proto_forget(msg: pb.ForgetRequest) -> ItemFilter:
    """The filter of a Forget request.

    Raises:
        InvalidArgument: no criterion, or since not before until.
    """
    return forget_filter(
        dict(msg.metadata),
        from_proto_timestamp(msg.since) if msg.HasField("since") else None,
        from_proto_timestamp(msg.until) if msg.HasField("until") else None,
    )


def to_proto_receipt(receipt: ErasureReceipt) -> pb.ErasureReceipt:
    return pb.ErasureReceipt(
        namespace=receipt.namespace,
        erased_at=to_proto_timestamp(receipt.at),
        conversations=[
            pb.ErasedConversation(
                conversation_id=c.conversation_id,
                seqs=[pb.SeqRange(first=r.first, last=r.last) for r in c.seqs],
                deleted=c.deleted,
            )
            for c in receipt.conversations
        ],
        counts=pb.ErasureCounts(**dataclasses.asdict(receipt.counts)),
        digest=receipt.digest,
    )
