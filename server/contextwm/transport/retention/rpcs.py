"""The retention RPC of ContextService."""

from __future__ import annotations

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.conversations.validation import scope_of
from contextwm.retention.apply import Retention
from contextwm.transport.retention.convert import to_proto_retention_report


class RetentionRpcs:
    """Needs self._retention, set by the servicer."""

    _retention: Retention

    def ApplyRetention(
        self, request: pb.ApplyRetentionRequest, context: grpc.ServicerContext
    ) -> pb.ApplyRetentionResponse:
        scope = scope_of(request.namespace, request.conversation_id, request.all_namespaces)
        report = self._retention.apply(scope, dry_run=request.dry_run)
        return to_proto_retention_report(report)
