"""The MCP tools over one contextwm conversation: workspace files, tool availability and
memory, each one client call whose result is rendered for a model."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from contextwm_client import (
    CaseMode,
    ChunkStrategy,
    Client,
    ContextWMError,
    FileSearchPage,
    Flag,
    NotFoundError,
    Role,
    ScrollDirection,
    Session,
    ToolCheck,
)
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from contextwm.mcp_server import render, results
from contextwm.mcp_server.search_pages import FileSearch, SearchPages

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
"""The MCP SDK's log levels (its log goes to stderr)."""

DEFAULT_CONTEXT_TOKENS = 4000
"""get_context's budget when the model names none: room for a useful context in any window."""

TOOL_NAMES = (
    "read_file_chunk",
    "scroll_file",
    "search_files",
    "search_files_next_page",
    "edit_file",
    "available_tools",
    "set_session_state",
    "get_context",
    "search_history",
    "append_note",
)
"""Every tool this server offers, by the name the tool-availability rules know it by."""

SESSION_TOOLS = ("available_tools", "set_session_state")
"""Tools that read or change the session itself: never gated, or an exclusive state could not
be left."""

_Fetched = TypeVar("_Fetched")
_Structured = TypeVar("_Structured", bound=results.Result)

ConversationId = Annotated[
    str | None,
    Field(description="Another conversation to work on; omitted: this server's conversation."),
]

# Hints for clients deciding what to confirm with the user. Reads and scrolls record the read
# in the conversation's memory, so only the calls that store nothing are read-only.
_READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_RECORDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
_EDITS = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)


def error_result(message: str) -> CallToolResult:
    """A tool error the model reads (isError), as opposed to a protocol error.

    Args:
        message: What went wrong, for the model.

    Returns:
        A result with the message as its only text and is_error set.
    """
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _failure_text(exc: ContextWMError) -> str:
    text = str(exc)  # "CODE: the server's message"
    if exc.code == "UNIMPLEMENTED":
        text += " (this contextwm server does not offer the call: it is older than its client)"
    return text


class ConversationTools:
    """The tools' bodies, over one client and the conversation they work on by default.

    Each public method is one MCP tool: its docstring is the description the model reads and
    its parameters' Field descriptions are the argument help, so they speak to the model and
    carry no Args sections. Each returns a CallToolResult holding the text of `render` and,
    as structured content, the `results` model its annotation names; a call contextwm
    refuses (a `ContextWMError`, or a ValueError the client raises before calling) returns
    an error result with the server's message instead, so the MCP server goes on serving.
    """

    def __init__(self, client: Client, conversation_id: str, search_pages: SearchPages) -> None:
        """Keeps the client and the default conversation.

        Args:
            client: The contextwm client; its namespace is the tools' namespace.
            conversation_id: The conversation of calls that name none.
            search_pages: Where searches are remembered by the token that continues them.
        """
        self._client = client
        self._conversation_id = conversation_id
        self._pages = search_pages

    # ------------------------------------------------------------ workspace files

    def read_file_chunk(
        self,
        path: Annotated[str, Field(description="Relative to the workspace, or absolute in it.")],
        chunk: Annotated[
            int | None,
            Field(
                ge=1,
                description="Which chunk, from 1. Give at most one of chunk, line and text;"
                " none reads the first chunk.",
            ),
        ] = None,
        line: Annotated[
            int | None, Field(ge=1, description="Read the chunk holding this line (from 1).")
        ] = None,
        text: Annotated[
            str | None,
            Field(description="Read the chunk holding the first occurrence of this text."),
        ] = None,
        strategy: Annotated[
            ChunkStrategy | None,
            Field(
                description="How to cut the file: by lines, at function and class definitions"
                " (functions), or at meaning shifts (semantic); omitted: the server's default."
            ),
        ] = None,
        max_lines: Annotated[
            int, Field(ge=0, description="Lines per chunk; 0: the server's default (100).")
        ] = 0,
        max_tokens: Annotated[
            int,
            Field(ge=0, description="Cut by tokens instead: at most this many per chunk."),
        ] = 0,
        conversation_id: ConversationId = None,
    ) -> Annotated[CallToolResult, results.ChunkResult]:
        """Read one chunk of a text file of the workspace: the first, a numbered one, or the
        one holding a line or a text. The header says which lines of how many it holds and
        whether more follow. The file becomes the one the conversation views: go on with
        scroll_file."""
        conversation = self._conversation(conversation_id)
        return self._run(
            lambda: self._client.read_file_chunk(
                conversation,
                path,
                chunk_index=None if chunk is None else chunk - 1,
                line=line,
                text=text,
                strategy=strategy,
                max_lines=max_lines,
                max_tokens=max_tokens,
            ),
            results.chunk_result,
            render.chunk_text,
        )

    def scroll_file(
        self,
        direction: Annotated[
            ScrollDirection | None,
            Field(description="Move to the next or the previous chunk (the default: next)."),
        ] = None,
        line: Annotated[
            int | None, Field(ge=1, description="Move to the chunk holding this line.")
        ] = None,
        text: Annotated[
            str | None,
            Field(
                description="Move to the chunk holding the next occurrence of this text (from"
                " the current chunk on, then from the top)."
            ),
        ] = None,
        conversation_id: ConversationId = None,
    ) -> Annotated[CallToolResult, results.ChunkResult]:
        """Move through the file last read with read_file_chunk, cut as that read cut it: to
        the next or previous chunk, or to the chunk holding a line or a text. Give at most
        one of direction, line and text."""
        conversation = self._conversation(conversation_id)
        if direction is None and line is None and text is None:
            direction = "next"
        return self._run(
            lambda: self._client.scroll_file(conversation, direction, line=line, text=text),
            results.chunk_result,
            render.chunk_text,
        )

    def search_files(
        self,
        pattern: Annotated[
            str, Field(min_length=1, description="The text to find, or a regular expression.")
        ],
        regex: Annotated[
            bool, Field(description="pattern is a regular expression (Python syntax).")
        ] = False,
        case: Annotated[
            CaseMode,
            Field(description="smart: case-insensitive unless pattern has an upper-case letter."),
        ] = "smart",
        include: Annotated[
            tuple[str, ...],
            Field(description='Only files matching one of these globs, e.g. ["*.py"].'),
        ] = (),
        exclude: Annotated[
            tuple[str, ...], Field(description="Leave out files matching these globs.")
        ] = (),
        path: Annotated[
            str, Field(description="A directory or file to search in; empty: the workspace.")
        ] = "",
        max_matches_per_file: Annotated[
            int, Field(ge=0, description="Matching lines shown per file; 0: 20.")
        ] = 0,
        context_lines: Annotated[
            int | None,
            Field(ge=0, description="Lines shown around each match; omitted: 3."),
        ] = None,
        page_size: Annotated[int, Field(ge=0, description="Matching lines per page; 0: 50.")] = 0,
        max_tokens: Annotated[
            int, Field(ge=0, description="When given, a page's text has at most this many tokens.")
        ] = 0,
        page_token: Annotated[
            str,
            Field(
                description="To continue a search with the same arguments; search_files_next_page"
                " needs only the token."
            ),
        ] = "",
        conversation_id: ConversationId = None,
    ) -> Annotated[CallToolResult, results.SearchPageResult]:
        """Search the text files of the workspace (.gitignore respected, binary files
        skipped), a page at a time: matching lines as `N:line`, context as `N-line`. The last
        line says how many matches remain and the page token that continues: pass it to
        search_files_next_page."""
        search = FileSearch(
            conversation_id=self._conversation(conversation_id),
            pattern=pattern,
            regex=regex,
            case=case,
            include=tuple(include),
            exclude=tuple(exclude),
            path=path,
            max_matches_per_file=max_matches_per_file,
            context_lines=context_lines,
            page_size=page_size,
            max_tokens=max_tokens,
        )
        return self._run(
            lambda: self._search(search, page_token),
            results.search_page_result,
            render.search_page_text,
        )

    def search_files_next_page(
        self,
        page_token: Annotated[
            str, Field(min_length=1, description="The token a search_files page ended with.")
        ],
    ) -> Annotated[CallToolResult, results.SearchPageResult]:
        """Show the next page of a search_files search, given the page token its last page
        ended with."""
        search = self._pages.recall(page_token)
        if search is None:
            return error_result(
                f"unknown page token {page_token!r}: this server did not give it out, or has"
                " forgotten it; call search_files again with the same arguments and this"
                " page_token."
            )
        return self._run(
            lambda: self._search(search, page_token),
            results.search_page_result,
            render.search_page_text,
        )

    def edit_file(
        self,
        path: Annotated[str, Field(description="Relative to the workspace, or absolute in it.")],
        search: Annotated[
            str,
            Field(
                min_length=1,
                description="Text that occurs exactly once in the file, with enough lines"
                " around it to be unique.",
            ),
        ],
        replace: Annotated[str, Field(description="What replaces it.")],
        expected_sha256: Annotated[
            str,
            Field(
                description="Refuse the edit unless the file still has this hash (the sha256"
                " of the read the edit is based on); empty: no check."
            ),
        ] = "",
        conversation_id: ConversationId = None,
    ) -> Annotated[CallToolResult, results.EditResult]:
        """Replace the one occurrence of search in a workspace file with replace, atomically.
        Refused, with the file untouched, when search is absent or occurs more than once
        (the error says where)."""
        conversation = self._conversation(conversation_id)
        return self._run(
            lambda: self._client.edit_file(
                conversation, path, search, replace, expected_sha256=expected_sha256
            ),
            results.edit_result,
            render.edit_text,
        )

    # ------------------------------------------------------------ tool availability

    def available_tools(
        self,
        tool: Annotated[
            str | None,
            Field(description="Also say whether this tool is available now, and if not, why."),
        ] = None,
        conversation_id: ConversationId = None,
    ) -> Annotated[CallToolResult, results.SessionResult]:
        """List the tools the conversation's session states allow now (the highest-priority
        active state decides), the active states, and the file being viewed."""
        conversation = self._conversation(conversation_id)

        def fetch() -> tuple[Session, ToolCheck | None]:
            session = self._client.get_session(conversation)
            check = self._client.check_tool(conversation, tool) if tool else None
            # The rules may name tools of other agents too: list the ones this server has.
            ours = tuple(t for t in session.tools if t in TOOL_NAMES)
            tools = (*ours, *(t for t in SESSION_TOOLS if t not in ours))
            return dataclasses.replace(session, tools=tools), check

        return self._run(
            fetch, lambda fetched: results.session_result(*fetched), render.session_text
        )

    def set_session_state(
        self,
        set_states: Annotated[
            tuple[str, ...],
            Field(
                description="States to set: interactive_commands, large_file_viewing,"
                " search_active, or a custom state the server's configuration names."
            ),
        ] = (),
        clear_states: Annotated[tuple[str, ...], Field(description="States to clear.")] = (),
        clear_all: Annotated[bool, Field(description="Clear every state first.")] = False,
        conversation_id: ConversationId = None,
    ) -> Annotated[CallToolResult, results.SessionResult]:
        """Set and clear states of the conversation's session, which decide the tools
        available; returns the session after the change."""
        conversation = self._conversation(conversation_id)
        return self._run(
            lambda: self._client.set_session_state(
                conversation, set=set_states, clear=clear_states, clear_all=clear_all
            ),
            results.session_result,
            render.session_text,
        )

    # ------------------------------------------------------------ memory

    def get_context(
        self,
        query: Annotated[
            str | None,
            Field(description="The question to answer; omitted: the conversation's recent focus."),
        ] = None,
        max_tokens: Annotated[
            int, Field(gt=0, description="Token budget of the whole context.")
        ] = DEFAULT_CONTEXT_TOKENS,
        categories: Annotated[
            bool,
            Field(
                description="Assemble by category budgets, with working files, project docs"
                " and a codebase map as well as the dialog."
            ),
        ] = False,
        conversation_id: ConversationId = None,
    ) -> Annotated[CallToolResult, results.ContextResult]:
        """The conversation's enhanced context for a query: its recent items plus the
        relevant older ones, within a token budget."""
        conversation = self._conversation(conversation_id)
        return self._run(
            lambda: self._client.get_context(
                conversation, query, max_tokens=max_tokens, categories=categories or None
            ),
            results.context_result,
            render.context_text,
        )

    def search_history(
        self,
        query: Annotated[str, Field(min_length=1, description="What to look for.")],
        top_k: Annotated[int, Field(ge=1, le=100, description="Items to return.")] = 10,
        include_window: Annotated[
            bool,
            Field(description="Search the recent window too; false: only older, archived items."),
        ] = True,
        conversation_id: ConversationId = None,
    ) -> Annotated[CallToolResult, results.HistoryResult]:
        """Search the conversation's memory (messages, notes, file reads) by meaning and by
        words; the best matches first."""
        conversation = self._conversation(conversation_id)
        return self._run(
            lambda: self._client.search(
                query, conversation_id=conversation, top_k=top_k, include_window=include_window
            ),
            lambda found: results.history_result(query, found),
            render.history_text,
        )

    def append_note(
        self,
        content: Annotated[str, Field(min_length=1, description="The note's text.")],
        role: Annotated[Role, Field(description="Who the note is from.")] = "assistant",
        flags: Annotated[
            tuple[Flag, ...],
            Field(description="Importance flags; pinned keeps the note in every context."),
        ] = (),
        conversation_id: ConversationId = None,
    ) -> Annotated[CallToolResult, results.NoteResult]:
        """Append a note to the conversation's memory, for get_context and search_history to
        find later (a decision, a finding, a user preference)."""
        conversation = self._conversation(conversation_id)
        return self._run(
            lambda: self._client.append(conversation, content, role=role, flags=flags),
            results.note_result,
            render.note_text,
        )

    # ------------------------------------------------------------ helpers

    def refusal(self, tool: str, conversation_id: str | None) -> CallToolResult | None:
        """An error result when the session's states do not allow tool now; else None."""
        try:
            check = self._client.check_tool(self._conversation(conversation_id), tool)
        except NotFoundError:  # no conversation yet, so no state: the tool itself answers
            return None
        except ContextWMError as exc:
            return error_result(_failure_text(exc))
        if check.allowed:
            return None
        # The rules' own reason may list other agents' tools: name only the state here.
        why = (
            f"the session state {check.deciding_state} does not allow it"
            if check.deciding_state
            else check.reason
        )
        return error_result(
            f"{tool}: not available now: {why}; available_tools lists what is, and"
            " set_session_state clears a state"
        )

    def _conversation(self, conversation_id: str | None) -> str:
        return conversation_id or self._conversation_id

    def _search(self, search: FileSearch, page_token: str) -> FileSearchPage:
        page = self._client.search_files(
            search.conversation_id,
            search.pattern,
            regex=search.regex,
            case=search.case,
            include=search.include,
            exclude=search.exclude,
            path=search.path,
            max_matches_per_file=search.max_matches_per_file,
            context_lines=search.context_lines,
            page_size=search.page_size,
            max_tokens=search.max_tokens,
            page_token=page_token,
        )
        self._pages.remember(page.next_page_token, search)
        return page

    @staticmethod
    def _run(
        fetch: Callable[[], _Fetched],
        structure: Callable[[_Fetched], _Structured],
        text: Callable[[_Structured], str],
    ) -> CallToolResult:
        # Only the call is guarded: a failure to structure or render a result the server
        # returned is a bug, which the SDK reports as an unexpected tool error and logs.
        try:
            fetched = fetch()
        except ContextWMError as exc:
            return error_result(_failure_text(exc))
        except ValueError as exc:  # refused by the client before any call
            return error_result(str(exc))
        result = structure(fetched)
        return CallToolResult(
            content=[TextContent(type="text", text=text(result))],
            structured_content=result.model_dump(mode="json"),
        )


def instructions(conversation_id: str) -> str:
    """What the MCP server tells a client about itself, for the model's system prompt.

    Args:
        conversation_id: The conversation the tools work on.

    Returns:
        A few sentences naming the tools by purpose.
    """
    return (
        f"contextwm tools over the conversation {conversation_id!r}. Workspace files: read one"
        " chunk at a time (read_file_chunk, then scroll_file), search them a page at a time"
        " (search_files, then search_files_next_page), and edit one exact match (edit_file)."
        " Session: which tools the session's states allow (available_tools, set_session_state)."
        " Memory: the relevant context for a question (get_context), a search of everything the"
        " conversation holds (search_history), and notes to keep (append_note)."
    )


def build_server(
    client: Client,
    conversation_id: str,
    *,
    log_level: LogLevel = "WARNING",
    search_pages: SearchPages | None = None,
) -> MCPServer[Any]:
    """Builds the MCP server with every tool, bound to a client and a conversation.

    Args:
        client: The contextwm client the tools call; the caller closes it.
        conversation_id: The conversation of tool calls that name none.
        log_level: The SDK's log level (its log goes to stderr).
        search_pages: Where searches are remembered by page token; None: a new store.

    Returns:
        The server, not yet running: run it with its `run` or serve its
        `streamable_http_app`.
    """
    tools = ConversationTools(client, conversation_id, search_pages or SearchPages())
    server: MCPServer[Any] = MCPServer(
        "contextwm", instructions=instructions(conversation_id), log_level=log_level
    )
    registrations: tuple[tuple[Callable[..., CallToolResult], str, ToolAnnotations], ...] = (
        (tools.read_file_chunk, "Read a file chunk", _RECORDS),
        (tools.scroll_file, "Scroll the viewed file", _RECORDS),
        (tools.search_files, "Search workspace files", _READS),
        (tools.search_files_next_page, "Next page of a file search", _READS),
        (tools.edit_file, "Edit a file (search/replace)", _EDITS),
        (tools.available_tools, "Available tools", _READS),
        (tools.set_session_state, "Set session states", _RECORDS),
        (tools.get_context, "Enhanced context", _READS),
        (tools.search_history, "Search the history", _READS),
        (tools.append_note, "Append a note", _RECORDS),
    )
    assert tuple(m.__name__ for m, _, _ in registrations) == TOOL_NAMES
    for method, title, hints in registrations:
        server.add_tool(
            method if method.__name__ in SESSION_TOOLS else _gated(tools, method),
            title=title,
            # One paragraph: the docstring's line breaks are the source's, not the model's.
            description=" ".join(inspect.cleandoc(method.__doc__ or "").split()),
            annotations=hints,
        )
    return server


def _gated(tools: ConversationTools, method: Callable[..., CallToolResult]) -> Callable[..., Any]:
    """method, refused while the session's states do not allow it (the SDK reads the
    signature and the docstring through functools.wraps)."""

    @functools.wraps(method)
    def call(**arguments: Any) -> CallToolResult:
        refusal = tools.refusal(method.__name__, arguments.get("conversation_id"))
        return refusal if refusal is not None else method(**arguments)

    return call
