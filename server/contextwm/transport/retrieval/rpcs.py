"""The context and search RPCs: GetContext (category budgets when asked) and Search."""

from __future__ import annotations

import grpc
from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.budgets.context import CategoryContexts
from contextwm.retrieval.requests import ContextRequest, SearchRequest
from contextwm.retrieval.retriever import Retriever
from contextwm.transport.budgets.convert import from_proto_category_options
from contextwm.transport.retrieval import convert
from contextwm.transport.timestamps import from_proto_timestamp


class RetrievalRpcs:
    """Needs self._retriever and self._categories, set by the servicer."""

    _retriever: Retriever
    _categories: CategoryContexts

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
    return from_proto_timestamp(request.as_of) if request.HasField("as_of") else None
