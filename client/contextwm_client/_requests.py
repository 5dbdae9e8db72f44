"""Request builders shared by the sync and asyncio clients: method arguments in, messages out.

Builders only translate; the server validates (one source of truth). The checks made here are
for enum names, which cannot be sent over the wire when unknown, for argument combinations
that the message could not express (a cache-read count without an input count), and for the
shape of the items of a batch (NewItem or dict).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from contextwm_client._convert.budgets import to_proto_category_options
from contextwm_client._convert.common import to_proto_timestamp
from contextwm_client._convert.conversations import (
    to_proto_conversation_settings,
    to_proto_item_state,
    to_proto_new_item,
)
from contextwm_client._convert.retrieval import to_proto_retrieval_mode
from contextwm_client._convert.workspace_files import to_proto_case_mode, to_proto_chunk_strategy
from contextwm_client._types import CategoryOptions, ConversationSettings, ImportItem, NewItem
from contextwm_client._vocabulary import (
    CaseMode,
    ChunkStrategy,
    Flag,
    ItemState,
    RetrievalMode,
    Role,
    ScrollDirection,
    TruncationStrategy,
)
from contextwm_client.v1 import contextwm_pb2 as pb

_NEW_ITEM_FIELDS = frozenset(f.name for f in dataclasses.fields(NewItem))


def create_conversation(
    namespace: str, conversation_id: str, settings: ConversationSettings | None
) -> pb.CreateConversationRequest:
    """Builds a CreateConversationRequest; no settings means all server defaults.

    Raises:
        ValueError: If a category or contributor type is unknown, or a category is given
            twice.
    """
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


def get_stats(
    namespace: str,
    conversation_id: str,
    all_namespaces: bool,
    page_size: int,
    page_token: str,
) -> pb.GetStatsRequest:
    """Builds a GetStatsRequest."""
    return pb.GetStatsRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        all_namespaces=all_namespaces,
        page_size=page_size,
        page_token=page_token,
    )


def update_conversation(
    namespace: str, conversation_id: str, settings: ConversationSettings
) -> pb.UpdateConversationRequest:
    """Builds an UpdateConversationRequest; None settings fields stay unchanged.

    Raises:
        ValueError: If a category or contributor type is unknown, or a category is given
            twice.
    """
    return pb.UpdateConversationRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        settings=to_proto_conversation_settings(settings),
    )


def delete_conversation(namespace: str, conversation_id: str) -> pb.DeleteConversationRequest:
    """Builds a DeleteConversationRequest."""
    return pb.DeleteConversationRequest(namespace=namespace, conversation_id=conversation_id)


def forget(
    namespace: str,
    conversation_id: str,
    metadata: Mapping[str, str] | None,
    since: datetime | None,
    until: datetime | None,
) -> pb.ForgetRequest:
    """Builds a ForgetRequest.

    Raises:
        ValueError: no criterion at all (delete_conversation removes a whole conversation).
    """
    if not metadata and since is None and until is None:
        raise ValueError(
            "forget needs metadata, since or until: to remove a whole conversation, delete it"
        )
    request = pb.ForgetRequest(
        namespace=namespace, conversation_id=conversation_id, metadata=dict(metadata or {})
    )
    if since is not None:
        request.since.CopyFrom(to_proto_timestamp(since))
    if until is not None:
        request.until.CopyFrom(to_proto_timestamp(until))
    return request


def append(namespace: str, conversation_id: str, item: NewItem) -> pb.AppendRequest:
    """Builds an AppendRequest."""
    return pb.AppendRequest(
        namespace=namespace, conversation_id=conversation_id, item=to_proto_new_item(item)
    )


def new_item(item: NewItem | Mapping[str, Any], index: int) -> NewItem:
    """The item of a batch as a NewItem: NewItems pass, dicts with NewItem's keys are converted.

    Args:
        item: A NewItem, or a dict such as `{"role": "user", "content": "hello"}`.
        index: The item's index in the batch, for the error message.

    Returns:
        The NewItem.

    Raises:
        TypeError: The item is neither, or the dict lacks "content", has other keys or gives
            flags as one string.
    """
    if isinstance(item, NewItem):
        return item
    if not isinstance(item, Mapping):
        raise TypeError(
            f"items[{index}] has type {type(item).__name__}; expected a NewItem or a dict such "
            'as {"role": "user", "content": "..."}'
        )
    unknown = sorted(set(item) - _NEW_ITEM_FIELDS, key=str)
    if unknown:
        raise TypeError(
            f"items[{index}] has unknown keys {unknown}; NewItem's are {sorted(_NEW_ITEM_FIELDS)}"
        )
    if "content" not in item:
        raise TypeError(f'items[{index}] has no "content"')
    flags = item.get("flags", ())
    if isinstance(flags, str):  # tuple("code") would be four one-letter flags
        raise TypeError(f"items[{index}] has flags {flags!r}; expected a sequence of names")
    # The defaults are NewItem's (a test compares a bare dict with a bare NewItem).
    return NewItem(
        content=item["content"],
        role=item.get("role", "user"),
        timestamp=item.get("timestamp"),
        flags=tuple(flags),
        metadata=item.get("metadata", {}),
        file=item.get("file"),
        idempotency_key=item.get("idempotency_key"),
    )


def append_batch(
    namespace: str, conversation_id: str, items: Sequence[NewItem | Mapping[str, Any]]
) -> pb.AppendBatchRequest:
    """Builds an AppendBatchRequest; dict items are converted to NewItems first.

    Raises:
        TypeError: An item is neither a NewItem nor a dict of NewItem's fields (the message
            names its index and type).
    """
    return pb.AppendBatchRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        items=[to_proto_new_item(new_item(item, i)) for i, item in enumerate(items)],
    )


def append_batches(
    namespace: str,
    conversation_id: str,
    items: Sequence[NewItem | Mapping[str, Any]],
    batch_size: int,
) -> list[pb.AppendBatchRequest]:
    """The AppendBatchRequests of a batch, batch_size items each (one, empty, for no items),
    every item converted before any call.

    Raises:
        ValueError: batch_size is below 1.
        TypeError: As append_batch.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    request = append_batch(namespace, conversation_id, items)
    if len(request.items) <= batch_size:
        return [request]
    return [
        pb.AppendBatchRequest(
            namespace=namespace,
            conversation_id=conversation_id,
            items=request.items[start : start + batch_size],
        )
        for start in range(0, len(request.items), batch_size)
    ]


def import_chunks(
    namespace: str, items: Iterable[ImportItem], chunk_size: int
) -> Iterator[pb.ImportRequest]:
    """The ImportRequests of a stream, chunk_size items each (built as the stream is read);
    items without a namespace take namespace."""
    chunk: list[pb.ImportItem] = []
    for i in items:
        chunk.append(
            pb.ImportItem(
                namespace=i.namespace if i.namespace is not None else namespace,
                conversation_id=i.conversation_id,
                item=to_proto_new_item(i.item),
                source=i.source,
            )
        )
        if len(chunk) == chunk_size:
            yield pb.ImportRequest(items=chunk)
            chunk = []
    if chunk:
        yield pb.ImportRequest(items=chunk)


def export(namespace: str, conversation_id: str) -> pb.ExportRequest:
    return pb.ExportRequest(namespace=namespace, conversation_id=conversation_id)


# Bytes of lines per RestoreRequest: well under gRPC's 4 MiB message limit.
RESTORE_CHUNK_BYTES = 1 << 20


def restore_chunks(namespace: str, lines: Iterable[str]) -> Iterator[pb.RestoreExportRequest]:
    """The RestoreRequests of a restore, about RESTORE_CHUNK_BYTES of lines each (built as the
    lines are read). The server reads the namespace from the first; each names it all the
    same, for a server that checks each message's namespace against a scoped key. A line's
    trailing newline is dropped."""
    chunk: list[str] = []
    size = 0
    first = True
    for line in lines:
        line = line.rstrip("\r\n")
        if chunk and size + len(line) > RESTORE_CHUNK_BYTES:
            yield pb.RestoreExportRequest(namespace=namespace, lines=chunk)
            chunk, size, first = [], 0, False
        chunk.append(line)
        size += len(line)
    if chunk or first:
        yield pb.RestoreExportRequest(namespace=namespace, lines=chunk)


def pin(namespace: str, conversation_id: str, seq: int) -> pb.PinRequest:
    """Builds the PinRequest of Pin and Unpin."""
    return pb.PinRequest(namespace=namespace, conversation_id=conversation_id, seq=seq)


def list_items(
    namespace: str,
    conversation_id: str,
    page_size: int,
    page_token: str,
    states: Sequence[ItemState],
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
    mode: RetrievalMode | None,
    time_hints: bool | None,
    categories: CategoryOptions | bool | None,
    as_of: datetime | None = None,
) -> pb.GetContextRequest:
    """Builds a GetContextRequest; None options stay unset (server defaults).

    categories None or False leaves ContextOptions.categories unset; True sets it empty (the
    conversation's budgets and weights); CategoryOptions are converted.

    Raises:
        ValueError: If mode is not "hybrid", "dense" or "lexical", a category or contributor
            type is unknown, or a category is given twice.
    """
    options = pb.ContextOptions(
        recent_share=recent_share,
        similarity_threshold=similarity_threshold,
        max_history_items=max_history_items,
        include_neighbors=include_neighbors,
        mode=to_proto_retrieval_mode(mode),
        time_hints=time_hints,
    )
    if isinstance(categories, CategoryOptions):
        options.categories.CopyFrom(to_proto_category_options(categories))
    elif categories:
        options.categories.SetInParent()
    request = pb.GetContextRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        query=query or "",
        max_tokens=max_tokens,
        options=options,
    )
    if as_of is not None:
        request.as_of.CopyFrom(to_proto_timestamp(as_of))
    return request


def search(
    namespace: str,
    query: str,
    *,
    conversation_id: str | None,
    top_k: int,
    include_window: bool,
    roles: Sequence[Role],
    flags: Sequence[Flag],
    since: datetime | None,
    until: datetime | None,
    metadata: Mapping[str, str] | None,
    mode: RetrievalMode | None,
    similarity_threshold: float | None,
    as_of: datetime | None = None,
    time_hints: bool | None = None,
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
    request = pb.SearchRequest(
        namespace=namespace,
        conversation_id=conversation_id or "",
        query=query,
        top_k=top_k,
        include_window=include_window,
        filter=search_filter,
        mode=to_proto_retrieval_mode(mode),
        similarity_threshold=similarity_threshold,
        time_hints=time_hints,
    )
    if as_of is not None:
        request.as_of.CopyFrom(to_proto_timestamp(as_of))
    return request


# ---------------------------------------------------------------- agent loop


def get_usage(
    namespace: str,
    conversation_id: str,
    reported_input_tokens: int | None,
    reported_cache_read_input_tokens: int,
) -> pb.GetUsageRequest:
    """Builds a GetUsageRequest; `reported` is set only when an input count is given.

    Raises:
        ValueError: If a cache-read count is given without an input count (it would be lost).
    """
    request = pb.GetUsageRequest(namespace=namespace, conversation_id=conversation_id)
    if reported_input_tokens is None:
        if reported_cache_read_input_tokens:
            raise ValueError("reported_cache_read_input_tokens needs reported_input_tokens")
        return request
    request.reported.CopyFrom(
        pb.ReportedUsage(
            input_tokens=reported_input_tokens,
            cache_read_input_tokens=reported_cache_read_input_tokens,
        )
    )
    return request


def get_active_context(
    namespace: str, conversation_id: str, page_size: int, page_token: str
) -> pb.GetActiveContextRequest:
    """Builds a GetActiveContextRequest."""
    return pb.GetActiveContextRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        page_size=page_size,
        page_token=page_token,
    )


def compact(namespace: str, conversation_id: str, summary: str | None) -> pb.CompactRequest:
    """Builds a CompactRequest; summary None leaves it unset (the server extracts one).

    A string is sent as it is, even when blank: the server refuses blank summaries.
    """
    # None for a proto3 optional field leaves it unset; "" sets it (HasField is true).
    return pb.CompactRequest(namespace=namespace, conversation_id=conversation_id, summary=summary)


def truncate(
    namespace: str, conversation_id: str, strategy: TruncationStrategy
) -> pb.TruncateRequest:
    """Builds a TruncateRequest (the server checks the strategy)."""
    return pb.TruncateRequest(
        namespace=namespace, conversation_id=conversation_id, strategy=strategy
    )


def create_checkpoint(
    namespace: str, conversation_id: str, name: str
) -> pb.CreateCheckpointRequest:
    """Builds a CreateCheckpointRequest."""
    return pb.CreateCheckpointRequest(
        namespace=namespace, conversation_id=conversation_id, name=name
    )


def list_checkpoints(namespace: str, conversation_id: str) -> pb.ListCheckpointsRequest:
    """Builds a ListCheckpointsRequest."""
    return pb.ListCheckpointsRequest(namespace=namespace, conversation_id=conversation_id)


def apply_retention(
    namespace: str, conversation_id: str, all_namespaces: bool, dry_run: bool
) -> pb.ApplyRetentionRequest:
    """Builds an ApplyRetentionRequest (the server checks the scope)."""
    return pb.ApplyRetentionRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        all_namespaces=all_namespaces,
        dry_run=dry_run,
    )


def restore_checkpoint(
    namespace: str, conversation_id: str, name: str
) -> pb.RestoreCheckpointRequest:
    """Builds a RestoreCheckpointRequest."""
    return pb.RestoreCheckpointRequest(
        namespace=namespace, conversation_id=conversation_id, name=name
    )


def list_context_edits(
    namespace: str, conversation_id: str, page_size: int, page_token: str
) -> pb.ListContextEditsRequest:
    """Builds a ListContextEditsRequest."""
    return pb.ListContextEditsRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        page_size=page_size,
        page_token=page_token,
    )


def watch(namespace: str, conversation_id: str, after_event_id: int) -> pb.WatchRequest:
    """Builds a WatchRequest."""
    return pb.WatchRequest(
        namespace=namespace, conversation_id=conversation_id, after_event_id=after_event_id
    )


def reembed(namespace: str, conversation_id: str | None, all_namespaces: bool) -> pb.ReembedRequest:
    """Builds a ReembedRequest (the server checks the scope)."""
    return pb.ReembedRequest(
        namespace=namespace, conversation_id=conversation_id or "", all_namespaces=all_namespaces
    )


# ---------------------------------------------------------------- workspace files


def _one_position(**given: object) -> None:
    named = [name for name, value in given.items() if value is not None]
    if len(named) > 1:
        raise ValueError(f"give at most one of {', '.join(given)}; got {', '.join(named)}")


def read_file_chunk(
    namespace: str,
    conversation_id: str,
    path: str,
    strategy: ChunkStrategy | None,
    max_lines: int,
    max_tokens: int,
    chunk_index: int | None,
    line: int | None,
    text: str | None,
    record: bool,
) -> pb.ReadFileChunkRequest:
    """Builds a ReadFileChunkRequest.

    Raises:
        ValueError: An unknown strategy, or more than one of chunk_index, line and text.
    """
    _one_position(chunk_index=chunk_index, line=line, text=text)
    request = pb.ReadFileChunkRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        path=path,
        strategy=to_proto_chunk_strategy(strategy),
        max_lines=max_lines,
        max_tokens=max_tokens,
        record=record,
    )
    if chunk_index is not None:
        request.chunk_index = chunk_index
    elif line is not None:
        request.line = line
    elif text is not None:
        request.text = text
    return request


_DIRECTIONS = {"next": pb.SCROLL_DIRECTION_NEXT, "previous": pb.SCROLL_DIRECTION_PREVIOUS}


def scroll_file(
    namespace: str,
    conversation_id: str,
    direction: ScrollDirection | None,
    line: int | None,
    text: str | None,
    record: bool,
) -> pb.ScrollFileRequest:
    """Builds a ScrollFileRequest.

    Raises:
        ValueError: An unknown direction, or not exactly one of direction, line and text.
    """
    _one_position(direction=direction, line=line, text=text)
    request = pb.ScrollFileRequest(
        namespace=namespace, conversation_id=conversation_id, record=record
    )
    if direction is not None:
        if direction not in _DIRECTIONS:
            raise ValueError(f"unknown direction {direction!r}; expected 'next' or 'previous'")
        request.direction = _DIRECTIONS[direction]
    elif line is not None:
        request.line = line
    elif text is not None:
        request.text = text
    else:
        raise ValueError("give one of direction, line and text")
    return request


def search_files(
    namespace: str,
    conversation_id: str,
    pattern: str,
    *,
    regex: bool,
    case: CaseMode,
    include: Sequence[str],
    exclude: Sequence[str],
    path: str,
    max_matches_per_file: int,
    context_lines: int | None,
    page_size: int,
    max_tokens: int,
    page_token: str,
) -> pb.SearchFilesRequest:
    """Builds a SearchFilesRequest.

    Raises:
        ValueError: An unknown case mode, or a glob list given as one string.
    """
    for name, globs in (("include", include), ("exclude", exclude)):
        if isinstance(globs, str):
            raise ValueError(f"{name} is a list of globs, not one string: use [{globs!r}]")
    request = pb.SearchFilesRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        pattern=pattern,
        regex=regex,
        case_mode=to_proto_case_mode(case),
        include=list(include),
        exclude=list(exclude),
        path=path,
        max_matches_per_file=max_matches_per_file,
        page_size=page_size,
        max_tokens=max_tokens,
        page_token=page_token,
    )
    if context_lines is not None:
        request.context_lines = context_lines
    return request


def set_session_state(
    namespace: str,
    conversation_id: str,
    set_states: Sequence[str],
    clear: Sequence[str],
    clear_all: bool,
) -> pb.SetSessionStateRequest:
    """Builds a SetSessionStateRequest.

    Raises:
        ValueError: A state list given as one string.
    """
    for name, states in (("set", set_states), ("clear", clear)):
        if isinstance(states, str):
            raise ValueError(f"{name} is a list of states, not one string: use [{states!r}]")
    return pb.SetSessionStateRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        set=list(set_states),
        clear=list(clear),
        clear_all=clear_all,
    )


def edit_file(
    namespace: str,
    conversation_id: str,
    path: str,
    search: str,
    replace: str,
    expected_sha256: str,
) -> pb.EditFileRequest:
    """Builds an EditFileRequest."""
    return pb.EditFileRequest(
        namespace=namespace,
        conversation_id=conversation_id,
        path=path,
        search=search,
        replace=replace,
        expected_sha256=expected_sha256,
    )


def get_session(namespace: str, conversation_id: str) -> pb.GetSessionRequest:
    """Builds a GetSessionRequest."""
    return pb.GetSessionRequest(namespace=namespace, conversation_id=conversation_id)


def check_tool(namespace: str, conversation_id: str, tool: str) -> pb.CheckToolRequest:
    """Builds a CheckToolRequest."""
    return pb.CheckToolRequest(namespace=namespace, conversation_id=conversation_id, tool=tool)


def create_key(
    name: str, role: str, namespaces: Sequence[str], expires_at: datetime | None
) -> pb.CreateKeyRequest:
    """Builds a CreateKeyRequest (the server checks the role and scopes)."""
    request = pb.CreateKeyRequest(name=name, role=role, namespaces=list(namespaces))
    if expires_at is not None:
        request.expires_at.CopyFrom(to_proto_timestamp(expires_at))
    return request
