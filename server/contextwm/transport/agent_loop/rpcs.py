"""The agent loop's RPCs: usage, active context, compaction, truncation, checkpoints, Watch."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.agent_loop.loop import AgentLoop
from contextwm.transport.access import end_with_key
from contextwm.transport.agent_loop import convert


class AgentLoopRpcs:
    """Needs self._loop, set by the servicer."""

    _loop: AgentLoop

    def GetUsage(self, request: pb.GetUsageRequest, context: grpc.ServicerContext) -> pb.Usage:
        reported = None
        if request.HasField("reported"):
            r = request.reported
            reported = (r.input_tokens, r.cache_read_input_tokens)
        usage = self._loop.usage(request.namespace, request.conversation_id, reported)
        return convert.to_proto_usage(usage)

    def GetActiveContext(
        self, request: pb.GetActiveContextRequest, context: grpc.ServicerContext
    ) -> pb.ActiveContext:
        page = self._loop.active_context(
            request.namespace, request.conversation_id, request.page_size, request.page_token
        )
        return convert.to_proto_active_context(page)

    def Compact(
        self, request: pb.CompactRequest, context: grpc.ServicerContext
    ) -> pb.CompactResponse:
        outcome = self._loop.compact(
            request.namespace,
            request.conversation_id,
            request.summary if request.HasField("summary") else None,
        )
        return pb.CompactResponse(
            compaction=convert.to_proto_compaction(outcome.compaction),
            usage=convert.to_proto_usage(outcome.usage),
        )

    def Truncate(
        self, request: pb.TruncateRequest, context: grpc.ServicerContext
    ) -> pb.TruncateResponse:
        outcome = self._loop.truncate(request.namespace, request.conversation_id, request.strategy)
        return pb.TruncateResponse(
            truncated_seqs=outcome.seqs,
            tokens_removed=outcome.tokens_removed,
            usage=convert.to_proto_usage(outcome.usage),
        )

    def CreateCheckpoint(
        self, request: pb.CreateCheckpointRequest, context: grpc.ServicerContext
    ) -> pb.Checkpoint:
        checkpoint = self._loop.create_checkpoint(
            request.namespace, request.conversation_id, request.name
        )
        return convert.to_proto_checkpoint(checkpoint)

    def ListCheckpoints(
        self, request: pb.ListCheckpointsRequest, context: grpc.ServicerContext
    ) -> pb.ListCheckpointsResponse:
        checkpoints = self._loop.list_checkpoints(request.namespace, request.conversation_id)
        return pb.ListCheckpointsResponse(
            checkpoints=[convert.to_proto_checkpoint(c) for c in checkpoints]
        )

    def RestoreCheckpoint(
        self, request: pb.RestoreCheckpointRequest, context: grpc.ServicerContext
    ) -> pb.RestoreCheckpointResponse:
        outcome = self._loop.restore_checkpoint(
            request.namespace, request.conversation_id, request.name
        )
        return pb.RestoreCheckpointResponse(
            checkpoint=convert.to_proto_checkpoint(outcome.checkpoint),
            reverted_items=outcome.reverted_items,
            undone_edits=outcome.undone_edits,
            usage=convert.to_proto_usage(outcome.usage),
        )

    def ListContextEdits(
        self, request: pb.ListContextEditsRequest, context: grpc.ServicerContext
    ) -> pb.ListContextEditsResponse:
        edits, token = self._loop.list_edits(
            request.namespace, request.conversation_id, request.page_size, request.page_token
        )
        return pb.ListContextEditsResponse(
            edits=[convert.to_proto_edit(e) for e in edits], next_page_token=token
        )

    def Watch(self, request: pb.WatchRequest, context: grpc.ServicerContext) -> Iterator[pb.Event]:
        watch = self._loop.watch(request.namespace, request.conversation_id, request.after_event_id)
        # A cancelled or finished call (client gone, server stopping) ends the stream, and so
        # does its API key's revocation or expiry.
        context.add_callback(watch.close)
        end_with_key(watch.close)
        try:
            for event in watch:
                yield convert.to_proto_event(event)
        finally:
            watch.close()
