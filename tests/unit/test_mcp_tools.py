"""The MCP tools over a fake contextwm client, through the MCP SDK's own client in-process:
the calls they make, the text and structured results they return (checked against their
output schemas by the SDK's client), and contextwm errors as tool errors."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar
from unittest.mock import create_autospec

import pytest
from contextwm.mcp_server import SearchPages, build_server
from contextwm.mcp_server.search_pages import FileSearch
from contextwm_client import (
    AppendResult,
    Client,
    EnhancedContext,
    FailedPreconditionError,
    FileChunk,
    FileEdit,
    FileSearchMatches,
    FileSearchPage,
    FileView,
    Item,
    ScoredItem,
    ScoreParts,
    SearchResult,
    Session,
    TokenAccount,
    ToolCheck,
    UnexpectedStatusError,
    WindowStats,
)
from mcp import Client as McpClient
from mcp.types import CallToolResult, TextContent

T = TypeVar("T")
T0 = datetime(2025, 3, 3, 14, 10, tzinfo=UTC)
TOOLS = {
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
}


def fake_client() -> Any:
    """A Client whose methods check their arguments against the real signatures."""
    return create_autospec(Client, instance=True)


def run(client: Any, body: Callable[[McpClient], Awaitable[T]]) -> T:
    """Runs body with an MCP client connected in-process to the tools over client."""

    async def main() -> T:
        async with McpClient(build_server(client, "agent")) as mcp:
            return await body(mcp)

    return asyncio.run(main())


def call(client: Any, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    return run(client, lambda mcp: mcp.call_tool(tool, arguments))


def text(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def chunk(index: int = 1, *, has_more: bool = True) -> FileChunk:
    first = index * 100 + 1
    last = min(first + 99, 250)
    return FileChunk(
        path="notes.md",
        index=index,
        first_line=first,
        last_line=last,
        content="".join(f"line {n}\n" for n in range(first, last + 1)),
        total_lines=250,
        total_chunks=3,
        has_more=has_more,
        has_previous=index > 0,
        token_count=400,
        strategy="lines",
        fallback="",
        split=False,
        replaced=False,
        sha256="ab" * 32,
        seq=5,
    )


def page(token: str, remaining: int, first: int) -> FileSearchPage:
    matches = FileSearchMatches(
        path="notes.md", lines=(), matches_in_file=120, first_match=first, shown=40, capped=False
    )
    return FileSearchPage(
        files=(matches,),
        next_page_token=token,
        total_matches=120,
        total_files=1,
        remaining_matches=remaining,
        remaining_files=1 if remaining else 0,
        files_searched=7,
        binary_skipped=1,
        too_large_skipped=0,
        text=f"notes.md\n{first + 1}:line {first + 1} of the long log\n",
        token_count=30,
    )


def session(states: tuple[str, ...] = ()) -> Session:
    return Session(
        conversation_id="agent",
        states=states,
        tools=("read_file_chunk", "scroll_file_chunk", "get_next_chunk", "scroll_file"),
        deciding_state=states[0] if states else "",
        view=FileView("notes.md", 1, 3, "lines", 100, 0, (0, 1)),
    )


def scored(seq: int, content: str) -> ScoredItem:
    item = Item(
        conversation_id="agent",
        seq=seq,
        role="assistant",
        content=content,
        timestamp=T0,
        token_count=9,
        flags=(),
        metadata={},
        file=None,
        state="window",
    )
    return ScoredItem(item, 0.81, ScoreParts(0, 0, 0.7, 0.3, 0, 0), None)


def test_every_tool_is_listed_with_input_and_output_schemas() -> None:
    listed = run(fake_client(), lambda mcp: mcp.list_tools()).tools
    assert {tool.name for tool in listed} == TOOLS
    for tool in listed:
        assert tool.description and tool.output_schema, tool.name
        assert "\n" not in tool.description, tool.name
        properties = tool.input_schema["properties"]
        # Every tool may name another conversation, except the one that continues a search
        # (the search remembers its conversation).
        assert ("conversation_id" in properties) == (tool.name != "search_files_next_page")


def test_a_chunk_has_a_header_and_chunks_count_from_one() -> None:
    client = fake_client()
    client.read_file_chunk.return_value = chunk(1)
    result = call(client, "read_file_chunk", {"path": "notes.md", "chunk": 2, "max_lines": 100})
    client.read_file_chunk.assert_called_once_with(
        "agent",
        "notes.md",
        chunk_index=1,
        line=None,
        text=None,
        strategy=None,
        max_lines=100,
        max_tokens=0,
    )
    assert not result.is_error
    assert text(result) == "notes.md lines 101-200 of 250 (chunk 2 of 3; more: yes)\n" + (
        chunk(1).content
    )
    assert result.structured_content is not None
    assert result.structured_content["chunk"] == 2
    assert result.structured_content["sha256"] == "ab" * 32


def test_scrolling_goes_to_the_next_chunk_unless_told_otherwise() -> None:
    client = fake_client()
    client.scroll_file.return_value = chunk(2, has_more=False)
    result = call(client, "scroll_file", {})
    client.scroll_file.assert_called_once_with("agent", "next", line=None, text=None)
    assert text(result).startswith("notes.md lines 201-250 of 250 (chunk 3 of 3; more: no)\n")
    call(client, "scroll_file", {"line": 30})
    client.scroll_file.assert_called_with("agent", None, line=30, text=None)


def test_the_next_page_repeats_the_search_with_the_token_alone() -> None:
    client = fake_client()
    client.search_files.side_effect = [page("t1", 80, 0), page("", 0, 40)]

    async def body(mcp: McpClient) -> tuple[CallToolResult, CallToolResult]:
        first = await mcp.call_tool(
            "search_files", {"pattern": "long log", "include": ["*.md"], "page_size": 40}
        )
        second = await mcp.call_tool("search_files_next_page", {"page_token": "t1"})
        return first, second

    first, second = run(client, body)
    assert text(first) == (
        "notes.md\n1:line 1 of the long log\n\n"
        '80 more matching lines in 1 file; continue with search_files_next_page(page_token="t1").'
    )
    assert text(second).endswith("\n\nEnd of results: 120 matching lines in 1 file.")
    assert second.structured_content is not None
    assert second.structured_content["next_page_token"] == ""
    arguments = {
        "regex": False,
        "case": "smart",
        "include": ("*.md",),
        "exclude": (),
        "path": "",
        "max_matches_per_file": 0,
        "context_lines": None,
        "page_size": 40,
        "max_tokens": 0,
    }
    assert [c.kwargs for c in client.search_files.call_args_list] == [
        {**arguments, "page_token": ""},
        {**arguments, "page_token": "t1"},
    ]


def test_an_unknown_page_token_is_a_tool_error_that_says_what_to_do() -> None:
    client = fake_client()
    result = call(client, "search_files_next_page", {"page_token": "nope"})
    assert result.is_error
    assert "call search_files again with the same arguments" in text(result)
    client.search_files.assert_not_called()


def test_no_match_says_how_many_files_were_searched() -> None:
    client = fake_client()
    client.search_files.return_value = FileSearchPage((), "", 0, 0, 0, 0, 7, 0, 0, "", 0)
    assert (
        text(call(client, "search_files", {"pattern": "zzz"})) == "No matches (7 files searched)."
    )


def test_contextwm_errors_are_tool_errors_with_the_servers_message() -> None:
    client = fake_client()
    client.edit_file.side_effect = FailedPreconditionError(
        "FAILED_PRECONDITION", "search text occurs 2 times, at lines 3 and 9"
    )
    client.get_session.side_effect = UnexpectedStatusError("UNIMPLEMENTED", "Method not found!")
    client.scroll_file.side_effect = ValueError("give exactly one of direction, line, text")
    client.append.return_value = AppendResult(
        7, 12, ("pinned",), False, (), WindowStats(1, 2, 3, 4)
    )

    async def body(mcp: McpClient) -> list[CallToolResult]:
        return [
            await mcp.call_tool("edit_file", {"path": "a.py", "search": "x", "replace": "y"}),
            await mcp.call_tool("available_tools", {}),
            await mcp.call_tool("scroll_file", {"direction": "next", "line": 3}),
            # ...and the server goes on serving.
            await mcp.call_tool("append_note", {"content": "noted", "flags": ["pinned"]}),
        ]

    edit, tools, scroll, note = run(client, body)
    assert edit.is_error and text(edit) == (
        "FAILED_PRECONDITION: search text occurs 2 times, at lines 3 and 9"
    )
    assert tools.is_error and text(tools).startswith("UNIMPLEMENTED: Method not found!")
    assert "older than its client" in text(tools)
    assert scroll.is_error and text(scroll) == "give exactly one of direction, line, text"
    assert not note.is_error and text(note) == "Appended item #7 (12 tokens; flags: pinned)."


def test_an_edit_says_where_the_replacement_is() -> None:
    client = fake_client()
    client.edit_file.return_value = FileEdit("src/app.py", 4, 5, "a" * 64, "b" * 64)
    result = call(
        client, "edit_file", {"path": "src/app.py", "search": "return 1", "replace": "return 2"}
    )
    client.edit_file.assert_called_once_with(
        "agent", "src/app.py", "return 1", "return 2", expected_sha256=""
    )
    assert text(result) == (
        f"Edited src/app.py: the replacement is at lines 4-5 (sha256 now {'b' * 64})."
    )


def test_available_tools_lists_states_tools_and_view_and_checks_a_tool() -> None:
    client = fake_client()
    client.get_session.return_value = session(("large_file_viewing",))
    client.check_tool.return_value = ToolCheck(
        "edit_files", False, "large_file_viewing forbids it", "large_file_viewing"
    )
    result = call(client, "available_tools", {"tool": "edit_files"})
    client.check_tool.assert_called_once_with("agent", "edit_files")
    assert text(result) == (
        "edit_files: not available: large_file_viewing forbids it\n"
        "states: large_file_viewing (deciding: large_file_viewing)\n"
        "tools available: read_file_chunk, scroll_file, available_tools, set_session_state\n"
        "viewing: notes.md, chunk 2 of 3 (seen: 1, 2)"
    )
    assert result.structured_content is not None
    assert result.structured_content["check"]["allowed"] is False


def test_a_tool_the_session_does_not_allow_is_refused_without_a_call() -> None:
    client = fake_client()
    client.check_tool.return_value = ToolCheck(
        "edit_file", False, "large_file_viewing allows only its own tools", "large_file_viewing"
    )
    result = call(
        client, "edit_file", {"path": "src/app.py", "search": "return 1", "replace": "return 2"}
    )
    client.check_tool.assert_called_once_with("agent", "edit_file")
    client.edit_file.assert_not_called()
    assert result.is_error and text(result).startswith(
        "edit_file: not available now: the session state large_file_viewing does not allow it"
    )


def test_session_states_are_set_and_cleared() -> None:
    client = fake_client()
    client.set_session_state.return_value = session()
    result = call(client, "set_session_state", {"set_states": ["search_active"], "clear_all": True})
    client.set_session_state.assert_called_once_with(
        "agent", set=("search_active",), clear=(), clear_all=True
    )
    assert text(result).startswith("states: none\n")


def test_memory_tools_render_the_context_and_the_hits() -> None:
    client = fake_client()
    client.get_context.return_value = EnhancedContext(
        text="## Recent context\nWe store invoices as JSON lines.\n",
        recent=(scored(3, "We store invoices as JSON lines."),),
        history=(),
        query="invoices",
        query_from_focus=False,
        tokens=TokenAccount(4000, 25, 20, 0, 5, 0, "cl100k_base"),
        time_range=None,
        unindexed_items=0,
        state="coding",
    )
    client.search.return_value = SearchResult(
        (scored(3, "We store invoices as JSON lines."),), None
    )

    async def body(mcp: McpClient) -> list[CallToolResult]:
        return [
            await mcp.call_tool("get_context", {"query": "invoices"}),
            await mcp.call_tool("search_history", {"query": "invoices", "top_k": 3}),
            await mcp.call_tool("search_history", {"query": "x", "conversation_id": "other"}),
        ]

    context, hits, _ = run(client, body)
    client.get_context.assert_called_once_with(
        "agent", "invoices", max_tokens=4000, categories=None
    )
    assert text(context) == (
        "## Recent context\nWe store invoices as JSON lines.\n\n"
        "[25 of 4000 tokens: 1 recent items, 0 from history]"
    )
    assert text(hits) == (
        "#3 assistant 2025-03-03 14:10 UTC (score 0.81)\nWe store invoices as JSON lines."
    )
    assert [c.kwargs["conversation_id"] for c in client.search.call_args_list] == [
        "agent",
        "other",
    ]


def test_search_pages_forget_the_least_recently_used() -> None:
    pages = SearchPages(capacity=2)
    searches = [
        FileSearch("agent", f"p{n}", False, "smart", (), (), "", 0, None, 0, 0) for n in range(3)
    ]
    pages.remember("", searches[0])  # a last page: nothing to continue
    assert pages.recall("") is None
    pages.remember("a", searches[0])
    pages.remember("b", searches[1])
    assert pages.recall("a") == searches[0]  # now the most recently used
    pages.remember("c", searches[2])
    assert pages.recall("b") is None
    assert (pages.recall("a"), pages.recall("c")) == (searches[0], searches[2])
    with pytest.raises(ValueError, match="at least 1"):
        SearchPages(capacity=0)
