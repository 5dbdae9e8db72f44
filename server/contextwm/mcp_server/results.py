"""The tools' structured results: small frozen models built from the client's results.

They are what an MCP client reads as `structuredContent` (their JSON schemas are the tools'
output schemas), and what `render` turns into the text the model reads, so the two cannot
disagree. Chunks are numbered from 1 here, as lines are: the model reads "chunk 2 of 3" and
asks for chunk 2; the client's `FileChunk.index` counts from 0.
"""

from __future__ import annotations

from contextwm_client import (
    AppendResult,
    EnhancedContext,
    FileChunk,
    FileEdit,
    FileSearchPage,
    FileView,
    ScoredItem,
    SearchResult,
    Session,
    ToolCheck,
)
from pydantic import BaseModel, ConfigDict


class Result(BaseModel):
    """Base of the results: frozen values."""

    model_config = ConfigDict(frozen=True)


class ChunkResult(Result):
    """One chunk of a workspace file, as read_file_chunk and scroll_file return it."""

    path: str
    chunk: int
    total_chunks: int
    first_line: int
    last_line: int
    total_lines: int
    has_more: bool
    has_previous: bool
    strategy: str
    fallback: str
    token_count: int
    sha256: str
    content: str


class SearchFileResult(Result):
    """A file's share of a search page."""

    path: str
    matches_in_file: int
    shown: int
    capped: bool


class SearchPageResult(Result):
    """One page of a workspace search; next_page_token is empty on the last page."""

    text: str
    files: tuple[SearchFileResult, ...]
    total_matches: int
    total_files: int
    remaining_matches: int
    remaining_files: int
    files_searched: int
    binary_skipped: int
    next_page_token: str


class EditResult(Result):
    """An applied edit: where the replacement now is, and the file's hashes around it."""

    path: str
    first_line: int
    last_line: int
    sha256_before: str
    sha256_after: str


class ViewResult(Result):
    """The file a conversation views and the chunks of it read so far (from 1)."""

    path: str
    chunk: int
    total_chunks: int
    seen_chunks: tuple[int, ...]


class ToolCheckResult(Result):
    """Whether one tool is available now, and if not, why."""

    tool: str
    allowed: bool
    reason: str
    deciding_state: str


class SessionResult(Result):
    """A conversation's session states, the tools they allow, its view, and a tool's check."""

    conversation_id: str
    states: tuple[str, ...]
    tools: tuple[str, ...]
    deciding_state: str
    view: ViewResult | None
    check: ToolCheckResult | None


class ContextResult(Result):
    """The enhanced context: the rendered text and what its tokens went to."""

    text: str
    query: str
    query_from_focus: bool
    total_tokens: int
    budget: int
    recent_items: int
    history_items: int
    recent_omitted: int
    state: str


class HitResult(Result):
    """One item found in a conversation's history."""

    seq: int
    role: str
    timestamp: str
    score: float
    content: str


class HistoryResult(Result):
    """The items a history search found, best first."""

    query: str
    hits: tuple[HitResult, ...]


class NoteResult(Result):
    """An appended item, and the older items it moved from the window to the archive."""

    seq: int
    token_count: int
    flags: tuple[str, ...]
    duplicate: bool
    evicted_seqs: tuple[int, ...]


def chunk_result(chunk: FileChunk) -> ChunkResult:
    """The structured form of a file chunk (numbered from 1)."""
    return ChunkResult(
        path=chunk.path,
        chunk=chunk.index + 1,
        total_chunks=chunk.total_chunks,
        first_line=chunk.first_line,
        last_line=chunk.last_line,
        total_lines=chunk.total_lines,
        has_more=chunk.has_more,
        has_previous=chunk.has_previous,
        strategy=chunk.strategy,
        fallback=chunk.fallback,
        token_count=chunk.token_count,
        sha256=chunk.sha256,
        content=chunk.content,
    )


def search_page_result(page: FileSearchPage) -> SearchPageResult:
    """The structured form of a search page."""
    return SearchPageResult(
        text=page.text,
        files=tuple(
            SearchFileResult(
                path=part.path,
                matches_in_file=part.matches_in_file,
                shown=part.shown,
                capped=part.capped,
            )
            for part in page.files
        ),
        total_matches=page.total_matches,
        total_files=page.total_files,
        remaining_matches=page.remaining_matches,
        remaining_files=page.remaining_files,
        files_searched=page.files_searched,
        binary_skipped=page.binary_skipped,
        next_page_token=page.next_page_token,
    )


def edit_result(edit: FileEdit) -> EditResult:
    """The structured form of an applied edit."""
    return EditResult(
        path=edit.path,
        first_line=edit.first_line,
        last_line=edit.last_line,
        sha256_before=edit.sha256_before,
        sha256_after=edit.sha256_after,
    )


def session_result(session: Session, check: ToolCheck | None = None) -> SessionResult:
    """The structured form of a session, with one tool's check when there was one."""
    return SessionResult(
        conversation_id=session.conversation_id,
        states=session.states,
        tools=session.tools,
        deciding_state=session.deciding_state,
        view=None if session.view is None else _view_result(session.view),
        check=None
        if check is None
        else ToolCheckResult(
            tool=check.tool,
            allowed=check.allowed,
            reason=check.reason,
            deciding_state=check.deciding_state,
        ),
    )


def _view_result(view: FileView) -> ViewResult:
    return ViewResult(
        path=view.path,
        chunk=view.chunk_index + 1,
        total_chunks=view.total_chunks,
        seen_chunks=tuple(index + 1 for index in view.seen_chunks),
    )


def context_result(context: EnhancedContext) -> ContextResult:
    """The structured form of an enhanced context (its items counted, not listed)."""
    return ContextResult(
        text=context.text,
        query=context.query,
        query_from_focus=context.query_from_focus,
        total_tokens=context.tokens.total,
        budget=context.tokens.budget,
        recent_items=len(context.recent),
        history_items=len(context.history),
        recent_omitted=context.tokens.recent_omitted,
        state=context.state,
    )


def history_result(query: str, found: SearchResult) -> HistoryResult:
    """The structured form of a history search's hits."""
    return HistoryResult(query=query, hits=tuple(_hit_result(hit) for hit in found.hits))


def _hit_result(hit: ScoredItem) -> HitResult:
    return HitResult(
        seq=hit.seq,
        role=hit.role,
        timestamp=hit.timestamp.isoformat(),
        score=hit.score,
        content=hit.content,
    )


def note_result(appended: AppendResult) -> NoteResult:
    """The structured form of an appended note."""
    return NoteResult(
        seq=appended.seq,
        token_count=appended.token_count,
        flags=appended.flags,
        duplicate=appended.duplicate,
        evicted_seqs=appended.evicted_seqs,
    )
