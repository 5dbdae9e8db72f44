"""The ContextService servicer: convert the request, call the engine, convert the response."""

from __future__ import annotations

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb
from contextwm_client.v1 import contextwm_pb2_grpc as pb_grpc

from contextwm.access.keys import Keys
from contextwm.agent_loop.loop import AgentLoop
from contextwm.budgets.context import CategoryContexts
from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.imports import Imports
from contextwm.domain.errors import InvalidArgument
from contextwm.domain.items import ROLES
from contextwm.erasure.service import Erasure
from contextwm.reembedding.reembedder import Reembedder
from contextwm.retention.apply import Retention
from contextwm.retrieval.requests import ContextRequest, SearchRequest
from contextwm.retrieval.retriever import Retriever
from contextwm.tool_availability.service import ToolSessions
from contextwm.transfer.service import Transfers
from contextwm.transport import convert, convert_loop
from contextwm.transport.convert_budgets import from_proto_category_options
from contextwm.transport.servicer_erasure import ErasureRpcs
from contextwm.transport.servicer_files import FileRpcs
from contextwm.transport.servicer_import import ImportRpcs
from contextwm.transport.servicer_keys import KeyRpcs
from contextwm.transport.servicer_loop import AgentLoopRpcs
from contextwm.transport.servicer_reembed import ReembedRpcs
from contextwm.transport.servicer_retention import RetentionRpcs
from contextwm.transport.servicer_stats import StatsRpcs
from contextwm.transport.servicer_transfer import TransferRpcs
from contextwm.workspace_files.service import WorkspaceFiles


class ContextServicer(
    AgentLoopRpcs,
    ErasureRpcs,
    FileRpcs,
    ImportRpcs,
    KeyRpcs,
    ReembedRpcs,
    RetentionRpcs,
    StatsRpcs,
    TransferRpcs,
    pb_grpc.ContextServiceServicer,
):
    """No business logic here; errors are mapped to statuses by the error interceptor."""

    def __init__(
        self,
        engine: ContextEngine,
        retriever: Retriever,
        categories: CategoryContexts,
        loop: AgentLoop,
        imports: Imports,
        retention: Retention,
        reembedder: Reembedder,
        files: WorkspaceFiles,
        tools: ToolSessions,
        transfers: Transfers,
        keys: Keys,
        erasure: Erasure,
    ) -> None:
        self._engine = engine
        self._erasure = erasure
        self._keys = keys
        self._files = files
        self._tools = tools
        self._imports = imports
        self._transfers = transfers
        self._retriever = retriever
        self._categories = categories
        self._loop = loop
        self._retention = retention
        self._reembedder = reembedder

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
        marker = {s: convert_loop.to_proto_compaction(c) for s, c in compactions.items()}
        return pb.ListItemsResponse(
            items=[convert.to_proto_item(i, marker.get(i.seq)) for i in items],
            next_page_token=token,
        )

    def GetContext(
        self, request: pb.GetContextRequest, context: grpc.ServicerContext
    ) -> pb.EnhancedContext:
        o = request.options
        asked = ContextRequest(
            query=request.query or None,
            max_tokens=request.max_tokens,
            recent_share=o.recent_share if o.HasField("recent_share") else None,
            similarity_threshold=(
                o.similarity_threshold if o.HasField("similarity_threshold") else None
            ),
            max_history_items=(o.max_history_items if o.HasField("max_history_items") else None),
            include_neighbors=o.include_neighbors if o.HasField("include_neighbors") else True,
            mode=convert.from_proto_mode(o.mode),
            time_hints=o.time_hints if o.HasField("time_hints") else True,
            as_of=_as_of(request),
        )
        if o.HasField("categories"):
            budgeted = self._categories.get_context(
                request.namespace,
                request.conversation_id,
                asked,
                from_proto_category_options(o.categories),
            )
            return convert.to_proto_context(budgeted.context, budgeted.allocation)
        ctx = self._retriever.get_context(request.namespace, request.conversation_id, asked)
        return convert.to_proto_context(ctx)

    def Search(self, request: pb.SearchRequest, context: grpc.ServicerContext) -> pb.SearchResponse:
        outcome = self._retriever.search(
            request.namespace,
            SearchRequest(
                query=request.query,
                conversation_id=request.conversation_id or None,
                top_k=request.top_k or 10,
                include_window=request.include_window,
                filter=convert.from_proto_filter(request.filter),
                mode=convert.from_proto_mode(request.mode),
                similarity_threshold=(
                    request.similarity_threshold
                    if request.HasField("similarity_threshold")
                    else None
                ),
                as_of=_as_of(request),
                time_hints=request.time_hints if request.HasField("time_hints") else True,
            ),
        )
        return pb.SearchResponse(
            hits=[convert.to_proto_scored(s) for s in outcome.hits],
            time_range=convert.to_proto_time_range(outcome.time_hint),
        )


def _as_of(request: pb.GetContextRequest | pb.SearchRequest) -> float | None:
    return convert.from_proto_timestamp(request.as_of) if request.HasField("as_of") else None
