"""Request builders shared by the sync and asyncio clients: method arguments in, messages out.

Builders only translate; the server validates (one source of truth). The one check made here
is for enum names, which cannot be sent over the wire when unknown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from contextwm_client._convert import (
    to_proto_conversation_settings,
    to_proto_item_state,
    to_proto_new_item,
    to_proto_retrieval_mode,
    to_proto_timestamp,
)
from contextwm_client._generated.contextwm.v1 import contextwm_pb2 as pb
from contextwm_client._types import ConversationSettings, NewItem


def create_conversation(
    namespace: str, conversation_id: str, settings: ConversationSettings | None
) -> pb.CreateConversationRequest:
    """Builds a CreateConversationRequest; no settings means all server defaults."""
    request = pb.CreateConversationRequest(namespace=namespace, conversation_id=conversation_id)
    if settings is not None:
        request.settings.CopyFrom(to_proto_conversation_settings(settings))
    return request


def get_conversation(namespace: str, conversation_id: str) -> pb.GetConversationRequest:
    """Builds a GetConversationRequest."""
    return pb.GetConversationRequest(namespace=namespace, conversation_id=conversation_id)


def list_conversations(
    namespace: str, page_size: int, page_token: str
) -> pb.ListConversationsRequest:
    """Builds a ListConversationsRequest."""
    return pb.ListConversationsRequest(
        namespace=namespace, page_size=page_size, page_token=page_token
    )


def update_conversation(
    namespace: str, conversation_id: str, settings: ConversationSettings
) -> pb.UpdateConversationRequest:
    """Builds an UpdateConversationRequest; None settings fields stay unchanged."""
    return pb.UpdateConversationRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        settings=to_proto_conversation_settings(settings),
    )


def delete_conversation(namespace: str, conversation_id: str) -> pb.DeleteConversationRequest:
    """Builds a DeleteConversationRequest."""
    return pb.DeleteConversationRequest(namespace=namespace, conversation_id=conversation_id)


def append(namespace: str, conversation_id: str, item: NewItem) -> pb.AppendRequest:
    """Builds an AppendRequest."""
    return pb.AppendRequest(
        namespace=namespace, conversation_id=conversation_id, item=to_proto_new_item(item)
    )


def append_batch(
    namespace: str, conversation_id: str, items: Sequence[NewItem]
) -> pb.AppendBatchRequest:
    """Builds an AppendBatchRequest."""
    return pb.AppendBatchRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        items=[to_proto_new_item(item) for item in items],
    )


def pin(namespace: str, conversation_id: str, seq: int) -> pb.PinRequest:
    """Builds the PinRequest of Pin and Unpin."""
    return pb.PinRequest(namespace=namespace, conversation_id=conversation_id, seq=seq)


def list_items(
    namespace: str, conversation_id: str, page_size: int, page_token: str, states: Sequence[str]
) -> pb.ListItemsRequest:
    """Builds a ListItemsRequest.

    Raises:
        ValueError: If a state is not "window", "archived", "compacted" or "reverted".
    """
    return pb.ListItemsRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        page_size=page_size,
        page_token=page_token,
        states=[to_proto_item_state(state) for state in states],
    )


def get_context(
    namespace: str,
    conversation_id: str,
    query: str | None,
    *,
    max_tokens: int,
    recent_share: float | None,
    similarity_threshold: float | None,
    max_history_items: int | None,
    include_neighbors: bool | None,
    mode: str | None,
    time_hints: bool | None,
) -> pb.GetContextRequest:
    """Builds a GetContextRequest; None options stay unset (server defaults).

    Raises:
        ValueError: If mode is not "hybrid", "dense" or "lexical".
    """
    return pb.GetContextRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        query=query or "",
        max_tokens=max_tokens,
        options=pb.ContextOptions(
            recent_share=recent_share,
            similarity_threshold=similarity_threshold,
            max_history_items=max_history_items,
            include_neighbors=include_neighbors,
            mode=to_proto_retrieval_mode(mode),
            time_hints=time_hints,
        ),
    )


def search(
    namespace: str,
    query: str,
    *,
    conversation_id: str | None,
    top_k: int,
    include_window: bool,
    roles: Sequence[str],
    flags: Sequence[str],
    since: datetime | None,
    until: datetime | None,
    metadata: Mapping[str, str] | None,
    mode: str | None,
    similarity_threshold: float | None,
) -> pb.SearchRequest:
    """Builds a SearchRequest; conversation_id None searches the whole namespace.

    Raises:
        ValueError: If mode is not "hybrid", "dense" or "lexical".
    """
    search_filter = pb.SearchFilter(roles=roles, flags=flags, metadata=metadata or {})
    if since is not None:
        search_filter.since.CopyFrom(to_proto_timestamp(since))
    if until is not None:
        search_filter.until.CopyFrom(to_proto_timestamp(until))
    return pb.SearchRequest(
        namespace=namespace,
        conversation_id=conversation_id or "",
        query=query,
        top_k=top_k,
        include_window=include_window,
        filter=search_filter,
        mode=to_proto_retrieval_mode(mode),
        similarity_threshold=similarity_threshold,
    )
