"""The conversation and item RPCs: create, read, list, update, append, pin, list items."""

from __future__ import annotations

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.agent_loop.loop import AgentLoop
from contextwm.conversations.engine import ContextEngine
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.items import ROLES
from contextwm.transport.agent_loop.convert import to_proto_compaction
from contextwm.transport.conversations import convert


class ConversationRpcs:
    """Needs self._engine and self._loop, set by the servicer (the loop lists the items: a
    compaction marker comes with its compaction's record)."""

    _engine: ContextEngine
    _loop: AgentLoop

    def CreateConversation(
        self, request: pb.CreateConversationRequest, context: grpc.ServicerContext
    ) -> pb.Conversation:
        info = self._engine.create_conversation(
            request.namespace,
            request.conversation_id,
            convert.from_proto_settings_patch(request.settings),
        )
        return convert.to_proto_conversation(info)

    def GetConversation(
        self, request: pb.GetConversationRequest, context: grpc.ServicerContext
    ) -> pb.Conversation:
        info = self._engine.get_conversation(request.namespace, request.conversation_id)
        return convert.to_proto_conversation(info)

    def ListConversations(
        self, request: pb.ListConversationsRequest, context: grpc.ServicerContext
    ) -> pb.ListConversationsResponse:
        infos, token = self._engine.list_conversations(
            request.namespace, request.page_size, request.page_token
        )
        return pb.ListConversationsResponse(
            conversations=[convert.to_proto_conversation(i) for i in infos],
            next_page_token=token,
        )

    def UpdateConversation(
        self, request: pb.UpdateConversationRequest, context: grpc.ServicerContext
    ) -> pb.Conversation:
        info = self._engine.update_conversation(
            request.namespace,
            request.conversation_id,
            convert.from_proto_settings_patch(request.settings),
        )
        return convert.to_proto_conversation(info)

    def Append(self, request: pb.AppendRequest, context: grpc.ServicerContext) -> pb.AppendResponse:
        if not request.HasField("item"):
            raise InvalidArgument(f"item is required (role one of {', '.join(sorted(ROLES))})")
        outcome = self._engine.append(
            request.namespace, request.conversation_id, [convert.from_proto_new_item(request.item)]
        )
        return pb.AppendResponse(
            result=convert.to_proto_append_result(outcome.results[0]),
            evicted_seqs=outcome.evicted,
            window=convert.to_proto_window(outcome.window),
        )

    def AppendBatch(
        self, request: pb.AppendBatchRequest, context: grpc.ServicerContext
    ) -> pb.AppendBatchResponse:
        outcome = self._engine.append(
            request.namespace,
            request.conversation_id,
            [convert.from_proto_new_item(i) for i in request.items],
        )
        return pb.AppendBatchResponse(
            results=[convert.to_proto_append_result(r) for r in outcome.results],
            evicted_seqs=outcome.evicted,
            window=convert.to_proto_window(outcome.window),
        )

    def Pin(self, request: pb.PinRequest, context: grpc.ServicerContext) -> pb.Item:
        item = self._engine.set_pinned(
            request.namespace, request.conversation_id, request.seq, True
        )
        return convert.to_proto_item(item)

    def Unpin(self, request: pb.PinRequest, context: grpc.ServicerContext) -> pb.Item:
        item = self._engine.set_pinned(
            request.namespace, request.conversation_id, request.seq, False
        )
        return convert.to_proto_item(item)

    def ListItems(
        self, request: pb.ListItemsRequest, context: grpc.ServicerContext
    ) -> pb.ListItemsResponse:
        items, token, compactions = self._loop.list_items(
            request.namespace,
            request.conversation_id,
            request.page_size,
            request.page_token,
            convert.from_proto_states(request.states),
        )
        marker = {s: to_proto_compaction(c) for s, c in compactions.items()}
        return pb.ListItemsResponse(
            items=[convert.to_proto_item(i, marker.get(i.seq)) for i in items],
            next_page_token=token,
        )
