"""Workspace files as a conversation's agent uses them: chunked reads and scrolling, searches
and edits, each confined to the conversation's workspace."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from contextwm.conversations.engine import ContextEngine
from contextwm.domain.errors import FailedPrecondition, InvalidArgument, NotFound
from contextwm.domain.items import FileRef, NewItem
from contextwm.domain.workspace_files import (
    ChunkSpec,
    ChunkStrategy,
    EditResult,
    FileChunk,
    FileSearchQuery,
    FileView,
    SearchPage,
    SessionState,
)
from contextwm.ports.tokens import TokenCounter
from contextwm.ports.workspace import Workspace
from contextwm.workspace_files.chunk_cache import ChunkCache
from contextwm.workspace_files.chunking import chunk_at, chunk_of_line, chunk_of_text
from contextwm.workspace_files.editing import edit_file
from contextwm.workspace_files.file_search import search_files
from contextwm.workspace_files.file_source import ScanningFiles
from contextwm.workspace_files.sessions import Sessions


@dataclass(frozen=True, slots=True)
class Position:
    """Where in a file: a chunk by index, the chunk holding a line, or the one holding the
    first occurrence of a text (at most one set; none is the first chunk)."""

    index: int | None = None
    line: int | None = None
    text: str | None = None


class WorkspaceFiles:
    """Reads, scrolls, searches and edits the files of conversations' workspaces."""

    def __init__(
        self,
        engine: ContextEngine,
        sessions: Sessions,
        cache: ChunkCache,
        *,
        strategy: ChunkStrategy = ChunkStrategy.SEMANTIC,
        max_lines: int = 100,
        max_file_bytes: int = 8 * 2**20,
        context_lines: int = 3,
    ) -> None:
        """Args:
        strategy, max_lines: how a read cuts a file when it does not say.
        max_file_bytes: larger files are refused whole (never cut).
        context_lines: lines around a search's matches when it does not say.
        """
        self._engine = engine
        self._sessions = sessions
        self.cache = cache
        self._strategy = strategy
        self._max_lines = max_lines
        self._max_file_bytes = max_file_bytes
        self.context_lines = context_lines

    def read_chunk(
        self,
        namespace: str,
        conversation_id: str,
        path: str,
        *,
        strategy: ChunkStrategy | None = None,
        max_lines: int = 0,
        max_tokens: int = 0,
        position: Position = Position(),
        record: bool = True,
    ) -> FileChunk:
        """One chunk of a file; the conversation then views that file.

        Args:
            strategy, max_lines: None and 0 take the server's settings.
            max_tokens: 0 sizes chunks by lines.
            record: append the chunk as a file item of the conversation (not when blank).

        Raises:
            NotFound: no such conversation, file, line or text.
            FailedPrecondition: the conversation has no workspace.
            PermissionDenied: the path leaves the workspace.
            InvalidArgument: a binary file, bad sizes or position.
            ResourceExhausted: a file over max_file_bytes, a line over max_tokens.
        """
        if max_lines < 0 or max_tokens < 0:
            raise InvalidArgument("max_lines and max_tokens may not be negative")
        workspace, counter = self._workspace(namespace, conversation_id)
        spec = ChunkSpec(
            strategy or self._strategy,
            max_lines or self._max_lines,
            max_tokens or None,
            counter.encoding,
        )
        return self._read(
            namespace, conversation_id, workspace, counter, path, spec, position, record
        )

    def scroll(
        self,
        namespace: str,
        conversation_id: str,
        *,
        step: int = 0,
        position: Position = Position(),
        record: bool = True,
    ) -> FileChunk:
        """Moves through the file the conversation views, cut as its last read cut it.

        Args:
            step: +1 for the next chunk, -1 for the previous; 0 when position is given.
            position: the chunk holding a line, or the next occurrence of a text (searched
                after the current chunk's first line, then from the top).

        Raises:
            FailedPrecondition: the conversation views no file.
            InvalidArgument: no chunk that way.
            NotFound: no such line or text, or the file is gone.
        """
        view = self._sessions.get(namespace, conversation_id).view
        if view is None:
            raise FailedPrecondition(
                f"conversation {conversation_id!r} views no file: read one first"
                " (ReadFileChunk), then scroll"
            )
        workspace, counter = self._workspace(namespace, conversation_id)
        if step:
            target = view.chunk_index + step
            if not 0 <= target < view.total_chunks:
                where = "last" if step > 0 else "first"
                raise InvalidArgument(
                    f"already at the {where} chunk of {view.path!r}"
                    f" ({view.chunk_index + 1} of {view.total_chunks})"
                )
            position = Position(index=target)
        return self._read(
            namespace,
            conversation_id,
            workspace,
            counter,
            view.path,
            view.spec,
            position,
            record,
            after=view,
        )

    def search(
        self, namespace: str, conversation_id: str, query: FileSearchQuery, page_token: str = ""
    ) -> SearchPage:
        """One page of a search of the conversation's workspace (see file_search)."""
        workspace, counter = self._workspace(namespace, conversation_id)
        return search_files(
            workspace,
            query,
            counter,
            page_token,
            files=ScanningFiles(self.cache),
            max_file_bytes=self._max_file_bytes,
        )

    def edit(
        self,
        namespace: str,
        conversation_id: str,
        path: str,
        search: str,
        replace: str,
        expected_sha256: str = "",
    ) -> EditResult:
        """Replaces the one occurrence of search in a file (see editing.edit_file)."""
        workspace, _ = self._workspace(namespace, conversation_id)
        try:
            return edit_file(
                workspace,
                path,
                search,
                replace,
                expected_sha256=expected_sha256,
                max_bytes=self._max_file_bytes,
            )
        finally:
            self.cache.invalidate(workspace.root, workspace.relative(path))

    # ------------------------------------------------------------ internals

    def _workspace(self, namespace: str, conversation_id: str) -> tuple[Workspace, TokenCounter]:
        engine = self._engine
        settings = engine.runtime(namespace, conversation_id).record.settings
        workspace = engine.workspace_of(settings)
        if workspace is None:
            raise FailedPrecondition(
                f"conversation {conversation_id!r} has no workspace: start the server with"
                " --workspace DIR, or give the conversation a workspace_root"
            )
        return workspace, engine.counters(settings.encoding)

    def _read(
        self,
        namespace: str,
        conversation_id: str,
        workspace: Workspace,
        counter: TokenCounter,
        path: str,
        spec: ChunkSpec,
        position: Position,
        record: bool,
        *,
        after: FileView | None = None,
    ) -> FileChunk:
        file = self.cache.file(workspace, path, self._max_file_bytes)
        plan = self.cache.plan(file, workspace.root, spec, counter)
        if position.line is not None:
            index = chunk_of_line(plan, position.line)
        elif position.text is not None:
            start = 1
            if (
                after is not None
                and after.path == file.path
                and after.chunk_index < len(plan.ranges)
            ):
                start = plan.ranges[after.chunk_index].first_line + 1
            try:
                index = chunk_of_text(file, plan, position.text, from_line=start)
            except NotFound:
                if start == 1:
                    raise
                index = chunk_of_text(file, plan, position.text)  # wrapped round to the top
        else:
            index = position.index or 0
        chunk = chunk_at(file, plan, index, counter, requested=spec.strategy)
        seq = self._record(namespace, conversation_id, chunk) if record else 0

        def view(session: SessionState) -> SessionState:
            old = session.view
            # Chunk numbers mean the same only for the same content cut the same way.
            same_cut = old is not None and (old.path, old.sha256, old.spec) == (
                chunk.path,
                chunk.sha256,
                spec,
            )
            seen = {*old.seen, chunk.index} if same_cut and old is not None else {chunk.index}
            new = FileView(
                chunk.path, spec, chunk.index, chunk.total_chunks, tuple(sorted(seen)), chunk.sha256
            )
            return dataclasses.replace(session, view=new)

        self._sessions.change(namespace, conversation_id, view)
        return dataclasses.replace(chunk, seq=seq)

    def _record(self, namespace: str, conversation_id: str, chunk: FileChunk) -> int:
        """Appends the chunk as a file read; 0 for a blank chunk, which no item can hold."""
        if not chunk.content.strip():
            return 0
        whole = chunk.total_chunks == 1
        item = NewItem(
            role="file",
            content=chunk.content,
            metadata={
                "lines": f"{chunk.first_line}-{chunk.last_line}",
                "total_lines": str(chunk.total_lines),
                "chunk": f"{chunk.index + 1}/{chunk.total_chunks}",
            },
            file=FileRef(chunk.path, "read", whole_file=whole),
        )
        outcome = self._engine.append(namespace, conversation_id, [item])
        return outcome.results[0].seq
