"""The statistics RPC of ContextService: what the store holds."""

from __future__ import annotations

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.conversations.engine import ContextEngine
from contextwm.transport.stats.convert import to_proto_get_stats_response
from contextwm.transport.workspace_files.convert import to_proto_chunk_cache_stats
from contextwm.workspace_files.service import WorkspaceFiles


class StatsRpcs:
    """Needs self._engine and self._files, set by the servicer."""

    _engine: ContextEngine
    _files: WorkspaceFiles

    def GetStats(
        self, request: pb.GetStatsRequest, context: grpc.ServicerContext
    ) -> pb.GetStatsResponse:
        page = self._engine.stats.get(
            request.namespace,
            request.conversation_id,
            all_namespaces=request.all_namespaces,
            page_size=request.page_size,
            page_token=request.page_token,
        )
        response = to_proto_get_stats_response(page)
        response.chunk_cache.CopyFrom(to_proto_chunk_cache_stats(self._files.cache.stats()))
        return response
