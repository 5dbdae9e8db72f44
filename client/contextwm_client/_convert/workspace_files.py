"""Converters of workspace files and tool availability: chunks, searches, edits, sessions."""

from __future__ import annotations

from contextwm_client._convert.common import UNSPECIFIED, by_name, by_number, enum_value
from contextwm_client._types import (
    ChunkCacheStats,
    FileChunk,
    FileEdit,
    FileSearchLine,
    FileSearchMatches,
    FileSearchPage,
    FileView,
    Session,
    ToolCheck,
)
from contextwm_client._vocabulary import CaseMode, ChunkStrategy, Unspecified
from contextwm_client.v1 import contextwm_pb2 as pb

_CHUNK_STRATEGY_PAIRS: tuple[tuple[ChunkStrategy, pb.ChunkStrategy.ValueType], ...] = (
    ("lines", pb.CHUNK_STRATEGY_LINES),
    ("functions", pb.CHUNK_STRATEGY_FUNCTIONS),
    ("semantic", pb.CHUNK_STRATEGY_SEMANTIC),
)
# CASE_MODE_SMART is 0, the default, so "smart" has a value and no "unspecified" exists.
_CASE_MODE_PAIRS: tuple[tuple[CaseMode, pb.CaseMode.ValueType], ...] = (
    ("smart", pb.CASE_MODE_SMART),
    ("sensitive", pb.CASE_MODE_SENSITIVE),
    ("insensitive", pb.CASE_MODE_INSENSITIVE),
)
_CHUNK_STRATEGIES = by_name(_CHUNK_STRATEGY_PAIRS)
_CASE_MODES = by_name(_CASE_MODE_PAIRS)
_CHUNK_STRATEGY_NAMES = by_number(_CHUNK_STRATEGY_PAIRS)


def to_proto_chunk_strategy(strategy: str | None) -> pb.ChunkStrategy.ValueType:
    """Converts "lines", "functions" or "semantic" to the enum; None: the server's default.

    Raises:
        ValueError: For any other name.
    """
    if strategy is None:
        return pb.CHUNK_STRATEGY_UNSPECIFIED
    return enum_value(_CHUNK_STRATEGIES, strategy, "chunk strategy")


def from_proto_chunk_strategy(strategy: int) -> ChunkStrategy | Unspecified:
    """Converts the enum to its lower-case name ("unspecified" for values this client lacks)."""
    return _CHUNK_STRATEGY_NAMES.get(strategy, UNSPECIFIED)


def to_proto_case_mode(mode: str) -> pb.CaseMode.ValueType:
    """Converts "smart", "sensitive" or "insensitive" to the enum.

    Raises:
        ValueError: For any other name.
    """
    return enum_value(_CASE_MODES, mode, "case mode")


def from_proto_file_chunk(message: pb.FileChunk) -> FileChunk:
    """Converts a FileChunk message."""
    return FileChunk(
        path=message.path,
        index=message.index,
        first_line=message.first_line,
        last_line=message.last_line,
        content=message.content,
        total_lines=message.total_lines,
        total_chunks=message.total_chunks,
        has_more=message.has_more,
        has_previous=message.has_previous,
        token_count=message.token_count,
        strategy=from_proto_chunk_strategy(message.strategy),
        fallback=message.fallback,
        split=message.split,
        replaced=message.replaced,
        sha256=message.sha256,
        seq=message.seq,
    )


def from_proto_search_files_page(message: pb.SearchFilesPage) -> FileSearchPage:
    """Converts a SearchFilesPage message."""
    return FileSearchPage(
        files=tuple(
            FileSearchMatches(
                path=f.path,
                lines=tuple(FileSearchLine(ln.number, ln.text, ln.match) for ln in f.lines),
                matches_in_file=f.matches_in_file,
                first_match=f.first_match,
                shown=f.shown,
                capped=f.capped,
            )
            for f in message.files
        ),
        next_page_token=message.next_page_token,
        total_matches=message.total_matches,
        total_files=message.total_files,
        remaining_matches=message.remaining_matches,
        remaining_files=message.remaining_files,
        files_searched=message.files_searched,
        binary_skipped=message.binary_skipped,
        too_large_skipped=message.too_large_skipped,
        text=message.text,
        token_count=message.token_count,
    )


def from_proto_edit_file_response(message: pb.EditFileResponse) -> FileEdit:
    """Converts an EditFileResponse."""
    return FileEdit(
        path=message.path,
        first_line=message.first_line,
        last_line=message.last_line,
        sha256_before=message.sha256_before,
        sha256_after=message.sha256_after,
    )


def from_proto_session(message: pb.Session) -> Session:
    """Converts a Session message."""
    view = None
    if message.HasField("view"):
        v = message.view
        view = FileView(
            path=v.path,
            chunk_index=v.chunk_index,
            total_chunks=v.total_chunks,
            strategy=from_proto_chunk_strategy(v.strategy),
            max_lines=v.max_lines,
            max_tokens=v.max_tokens,
            seen_chunks=tuple(v.seen_chunks),
        )
    return Session(
        conversation_id=message.conversation_id,
        states=tuple(message.states),
        tools=tuple(message.tools),
        deciding_state=message.deciding_state,
        view=view,
    )


def from_proto_tool_check(message: pb.ToolCheck) -> ToolCheck:
    """Converts a ToolCheck message."""
    return ToolCheck(
        tool=message.tool,
        allowed=message.allowed,
        reason=message.reason,
        deciding_state=message.deciding_state,
    )


def from_proto_chunk_cache_stats(message: pb.ChunkCacheStats) -> ChunkCacheStats:
    """Converts a ChunkCacheStats message."""
    return ChunkCacheStats(
        hits=message.hits,
        misses=message.misses,
        hit_rate=message.hit_rate,
        bytes=message.bytes,
        max_bytes=message.max_bytes,
        entries=message.entries,
        evictions=message.evictions,
    )
