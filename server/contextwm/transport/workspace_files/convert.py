"""Converters of the workspace file and tool availability messages."""

from __future__ import annotations

from contextwm_client.v1 import contextwm_pb2 as pb

from contextwm.domain.errors import InvalidArgument
from contextwm.domain.workspace_files import (
    CaseMode,
    ChunkCacheStats,
    ChunkStrategy,
    EditResult,
    FileChunk,
    FileSearchQuery,
    SearchPage,
    SessionState,
    ToolAvailability,
    ToolCheck,
)

__all__ = [
    "from_proto_chunk_strategy",
    "from_proto_search_files_request",
    "to_proto_chunk_cache_stats",
    "to_proto_edit_file_response",
    "to_proto_file_chunk",
    "to_proto_search_files_page",
    "to_proto_session",
    "to_proto_tool_check",
]

_STRATEGIES: dict[int, ChunkStrategy] = {
    pb.CHUNK_STRATEGY_LINES: ChunkStrategy.LINES,
    pb.CHUNK_STRATEGY_FUNCTIONS: ChunkStrategy.FUNCTIONS,
    pb.CHUNK_STRATEGY_SEMANTIC: ChunkStrategy.SEMANTIC,
}
_STRATEGY_VALUES: dict[ChunkStrategy, pb.ChunkStrategy.ValueType] = {
    ChunkStrategy.LINES: pb.CHUNK_STRATEGY_LINES,
    ChunkStrategy.FUNCTIONS: pb.CHUNK_STRATEGY_FUNCTIONS,
    ChunkStrategy.SEMANTIC: pb.CHUNK_STRATEGY_SEMANTIC,
}
_CASES = {
    pb.CASE_MODE_SMART: CaseMode.SMART,
    pb.CASE_MODE_SENSITIVE: CaseMode.SENSITIVE,
    pb.CASE_MODE_INSENSITIVE: CaseMode.INSENSITIVE,
}
# What a field left at 0 means: the protocol's defaults, documented in the proto.
DEFAULT_MATCHES_PER_FILE = 20
DEFAULT_PAGE_MATCHES = 50


def from_proto_chunk_strategy(value: int) -> ChunkStrategy | None:
    """None for CHUNK_STRATEGY_UNSPECIFIED (the server's default).

    Raises:
        InvalidArgument: a value this server does not know.
    """
    if value == pb.CHUNK_STRATEGY_UNSPECIFIED:
        return None
    try:
        return _STRATEGIES[value]
    except KeyError:
        raise InvalidArgument(f"unknown chunk strategy {value}") from None


def to_proto_file_chunk(chunk: FileChunk) -> pb.FileChunk:
    return pb.FileChunk(
        path=chunk.path,
        index=chunk.index,
        first_line=chunk.first_line,
        last_line=chunk.last_line,
        content=chunk.content,
        total_lines=chunk.total_lines,
        total_chunks=chunk.total_chunks,
        has_more=chunk.has_more,
        has_previous=chunk.has_previous,
        token_count=chunk.token_count,
        strategy=_STRATEGY_VALUES[chunk.strategy],
        fallback=chunk.fallback,
        split=chunk.split,
        replaced=chunk.replaced,
        sha256=chunk.sha256,
        seq=chunk.seq,
    )


def from_proto_search_files_request(
    request: pb.SearchFilesRequest, default_context_lines: int
) -> FileSearchQuery:
    """Raises InvalidArgument for an unknown case mode or negative numbers."""
    if request.case_mode not in _CASES:
        raise InvalidArgument(f"unknown case mode {request.case_mode}")
    numbers = {
        "max_matches_per_file": request.max_matches_per_file,
        "page_size": request.page_size,
        "max_tokens": request.max_tokens,
        "context_lines": request.context_lines,
    }
    for name, value in numbers.items():
        if value < 0:
            raise InvalidArgument(f"{name} may not be negative, got {value}")
    return FileSearchQuery(
        pattern=request.pattern,
        regex=request.regex,
        case=_CASES[request.case_mode],
        include=tuple(request.include),
        exclude=tuple(request.exclude),
        path=request.path,
        max_matches_per_file=request.max_matches_per_file or DEFAULT_MATCHES_PER_FILE,
        context_lines=(
            request.context_lines if request.HasField("context_lines") else default_context_lines
        ),
        page_matches=request.page_size or DEFAULT_PAGE_MATCHES,
        max_tokens=request.max_tokens or None,
    )


def to_proto_search_files_page(page: SearchPage) -> pb.SearchFilesPage:
    return pb.SearchFilesPage(
        files=[
            pb.FileMatches(
                path=f.path,
                lines=[
                    pb.SearchLine(number=ln.number, text=ln.text, match=ln.match) for ln in f.lines
                ],
                matches_in_file=f.matches_in_file,
                first_match=f.first_match,
                shown=f.shown,
                capped=f.capped,
            )
            for f in page.files
        ],
        next_page_token=page.next_page_token,
        total_matches=page.total_matches,
        total_files=page.total_files,
        remaining_matches=page.remaining_matches,
        remaining_files=page.remaining_files,
        files_searched=page.files_searched,
        binary_skipped=page.binary_skipped,
        too_large_skipped=page.too_large_skipped,
        text=page.text,
        token_count=page.token_count,
    )


def to_proto_edit_file_response(result: EditResult) -> pb.EditFileResponse:
    return pb.EditFileResponse(
        path=result.path,
        first_line=result.first_line,
        last_line=result.last_line,
        sha256_before=result.sha256_before,
        sha256_after=result.sha256_after,
    )


def to_proto_session(
    conversation_id: str, session: SessionState, tools: ToolAvailability
) -> pb.Session:
    message = pb.Session(
        conversation_id=conversation_id,
        states=list(session.states),
        tools=list(tools.tools),
        deciding_state=tools.deciding_state,
    )
    if (view := session.view) is not None:
        message.view.CopyFrom(
            pb.FileView(
                path=view.path,
                chunk_index=view.chunk_index,
                total_chunks=view.total_chunks,
                strategy=_STRATEGY_VALUES[view.spec.strategy],
                max_lines=view.spec.max_lines,
                max_tokens=view.spec.max_tokens or 0,
                seen_chunks=list(view.seen),
            )
        )
    return message


def to_proto_tool_check(check: ToolCheck) -> pb.ToolCheck:
    return pb.ToolCheck(
        tool=check.tool,
        allowed=check.allowed,
        reason=check.reason,
        deciding_state=check.deciding_state,
    )


def to_proto_chunk_cache_stats(stats: ChunkCacheStats) -> pb.ChunkCacheStats:
    lookups = stats.hits + stats.misses
    return pb.ChunkCacheStats(
        hits=stats.hits,
        misses=stats.misses,
        hit_rate=stats.hits / lookups if lookups else 0.0,
        bytes=stats.bytes,
        max_bytes=stats.max_bytes,
        entries=stats.entries,
        evictions=stats.evictions,
    )
