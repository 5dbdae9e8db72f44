"""Converters of the re-embedding messages."""

from __future__ import annotations

from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.conversations.validation import scope_of
from contextwm.domain.scope import Scope
from contextwm.reembedding.progress import ReembedProgress

__all__ = ["from_proto_reembed_request", "to_proto_reembed_progress"]


def from_proto_reembed_request(request: pb.ReembedRequest) -> Scope:
    """Raises InvalidArgument for a scope that names too much or a bad name."""
    return scope_of(request.namespace, request.conversation_id, request.all_namespaces)


def to_proto_reembed_progress(progress: ReembedProgress) -> pb.ReembedProgress:
    return pb.ReembedProgress(
        model=progress.model,
        conversations_done=progress.conversations_done,
        conversations_total=progress.conversations_total,
        items_done=progress.items_done,
        items_total=progress.items_total,
        items_reused=progress.items_reused,
        items_per_second=progress.items_per_second,
        namespace=progress.namespace,
        conversation_id=progress.conversation_id,
        finished=progress.finished,
    )
