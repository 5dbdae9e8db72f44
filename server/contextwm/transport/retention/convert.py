"""Converters for retention policies and runs: to_proto_x / from_proto_x."""

from __future__ import annotations

from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.domain.retention import RetentionPolicy
from contextwm.retention.outcomes import ConversationOutcome, RetentionReport


def from_proto_retention_policy(msg: pb.RetentionPolicy) -> RetentionPolicy:
    """Unset fields stay None (the wider policy's)."""
    return RetentionPolicy(
        max_age_seconds=msg.max_age_seconds if msg.HasField("max_age_seconds") else None,
        max_archived_items=(msg.max_archived_items if msg.HasField("max_archived_items") else None),
        inactive_seconds=msg.inactive_seconds if msg.HasField("inactive_seconds") else None,
        remove_pinned=msg.remove_pinned if msg.HasField("remove_pinned") else None,
    )


def to_proto_retention_policy(policy: RetentionPolicy) -> pb.RetentionPolicy:
    # None leaves a proto3 optional field unset: the wider policy's.
    return pb.RetentionPolicy(
        max_age_seconds=policy.max_age_seconds,
        max_archived_items=policy.max_archived_items,
        inactive_seconds=policy.inactive_seconds,
        remove_pinned=policy.remove_pinned,
    )


def _to_proto_outcome(outcome: ConversationOutcome) -> pb.ConversationRetention:
    return pb.ConversationRetention(
        namespace=outcome.namespace,
        conversation_id=outcome.conversation_id,
        policy=to_proto_retention_policy(outcome.policy),
        conversation_removed=outcome.conversation_removed,
        removed_by_age=outcome.by_age,
        removed_by_count=outcome.by_count,
        removed_by_inactivity=outcome.by_inactivity,
        seqs=outcome.seqs,
        more_seqs=outcome.more_seqs,
    )


def to_proto_retention_report(report: RetentionReport) -> pb.ApplyRetentionResponse:
    return pb.ApplyRetentionResponse(
        dry_run=report.dry_run,
        conversations=[_to_proto_outcome(c) for c in report.conversations],
        conversations_checked=report.checked,
        items_removed=report.items_removed,
        conversations_removed=report.conversations_removed,
    )
