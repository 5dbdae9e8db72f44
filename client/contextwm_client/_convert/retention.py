"""Converters of retention: policies and the report of a run."""

from __future__ import annotations

from contextwm_client._convert.common import if_set
from contextwm_client._types import ConversationRetention, RetentionPolicy, RetentionReport
from contextwm_client.v1 import contextwm_pb2 as pb


def to_proto_retention_policy(value: RetentionPolicy) -> pb.RetentionPolicy:
    """Converts a retention policy to its message; None fields stay unset (the wider
    policy's)."""
    return pb.RetentionPolicy(
        max_age_seconds=value.max_age_seconds,
        max_archived_items=value.max_archived_items,
        inactive_seconds=value.inactive_seconds,
        remove_pinned=value.remove_pinned,
    )


def from_proto_retention_policy(message: pb.RetentionPolicy) -> RetentionPolicy:
    """Converts a RetentionPolicy message to a policy; unset fields become None."""
    m = message
    return RetentionPolicy(
        max_age_seconds=if_set(m, "max_age_seconds", m.max_age_seconds),
        max_archived_items=if_set(m, "max_archived_items", m.max_archived_items),
        inactive_seconds=if_set(m, "inactive_seconds", m.inactive_seconds),
        remove_pinned=if_set(m, "remove_pinned", m.remove_pinned),
    )


def from_proto_conversation_retention(
    message: pb.ConversationRetention,
) -> ConversationRetention:
    """Converts a ConversationRetention message to what one conversation lost."""
    return ConversationRetention(
        namespace=message.namespace,
        conversation_id=message.conversation_id,
        policy=from_proto_retention_policy(message.policy),
        conversation_removed=message.conversation_removed,
        removed_by_age=message.removed_by_age,
        removed_by_count=message.removed_by_count,
        removed_by_inactivity=message.removed_by_inactivity,
        seqs=tuple(message.seqs),
        more_seqs=message.more_seqs,
    )


def from_proto_apply_retention_response(
    message: pb.ApplyRetentionResponse,
) -> RetentionReport:
    """Converts an ApplyRetentionResponse to the outcome of a retention run."""
    return RetentionReport(
        dry_run=message.dry_run,
        conversations=tuple(from_proto_conversation_retention(c) for c in message.conversations),
        conversations_checked=message.conversations_checked,
        items_removed=message.items_removed,
        conversations_removed=message.conversations_removed,
    )
