"""Converters of re-embedding progress."""

from __future__ import annotations

from contextwm_client._types import ReembedProgress
from contextwm_client.v1 import contextwm_pb2 as pb


def from_proto_reembed_progress(message: pb.ReembedProgress) -> ReembedProgress:
    """Converts a ReembedProgress message to a ReembedProgress."""
    return ReembedProgress(
        model=message.model,
        conversations_done=message.conversations_done,
        conversations_total=message.conversations_total,
        items_done=message.items_done,
        items_total=message.items_total,
        items_reused=message.items_reused,
        items_per_second=message.items_per_second,
        namespace=message.namespace,
        conversation_id=message.conversation_id,
        finished=message.finished,
    )
