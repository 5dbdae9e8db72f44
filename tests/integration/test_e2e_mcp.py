"""`contextwm mcp` end to end: a real contextwm in-process, the MCP server as a subprocess
(`python -m contextwm mcp`), driven by the MCP SDK's own client over stdio, and once over
streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import StartService
from contextwm.app import Service
from contextwm_client import Client
from mcp import Client as McpClient
from mcp import StdioServerParameters
from mcp.types import CallToolResult, TextContent
from server_process import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
# The subprocess imports this checkout, whatever is installed.
PYTHONPATH = os.pathsep.join([str(ROOT / "server"), str(ROOT / "client")])
START_SECONDS = 60.0
LONG = "".join(f"line {n} of the long log\n" for n in range(1, 251))
APP = "def total(prices):\n    return sum(prices)\n\n\ndef count(prices):\n    return len(prices)\n"
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


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "notes.md").write_text(LONG)
    (root / "src" / "app.py").write_text(APP)
    return root


@pytest.fixture
def service(start_service: StartService, workspace: Path) -> Service:
    return start_service(workspace_root=str(workspace))


def mcp_command(service: Service, *arguments: str) -> list[str]:
    """`contextwm mcp` against the service, for the conversation "agent" unless told."""
    if "--conversation" not in arguments:
        arguments = ("--conversation", "agent", *arguments)
    return ["-m", "contextwm", "mcp", "--target", f"127.0.0.1:{service.port}", *arguments]


@asynccontextmanager
async def stdio_mcp(service: Service, *arguments: str) -> AsyncIterator[McpClient]:
    """The SDK's client, connected over stdio to `contextwm mcp` started as its subprocess."""
    params = StdioServerParameters(
        command=sys.executable,
        args=mcp_command(service, *arguments),
        env={"PYTHONPATH": PYTHONPATH, "HF_HUB_OFFLINE": "1"},
    )
    async with McpClient(params) as client:
        yield client


def text(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, text(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def test_the_tools_are_listed_and_the_conversation_is_created(service: Service) -> None:
    async def scenario() -> None:
        async with stdio_mcp(service) as mcp:
            listed = (await mcp.list_tools()).tools
            assert {tool.name for tool in listed} == TOOLS
            assert all(tool.output_schema for tool in listed)
            assert mcp.instructions is not None and "'agent'" in mcp.instructions

    asyncio.run(scenario())
    with Client(f"127.0.0.1:{service.port}") as client:
        assert client.get_conversation("agent").total_items == 0


def test_a_note_is_found_by_the_context_and_the_history_search(service: Service) -> None:
    note = "Decision: invoices are kept as JSON lines in the archive bucket, one file per day."

    async def scenario() -> None:
        async with stdio_mcp(service) as mcp:
            appended = await mcp.call_tool("append_note", {"content": note, "flags": ["pinned"]})
            seq = structured(appended)["seq"]
            assert text(appended).startswith(f"Appended item #{seq} (")

            context = await mcp.call_tool(
                "get_context", {"query": "Where are the invoices kept?", "max_tokens": 1000}
            )
            assert note in structured(context)["text"]
            assert re.search(r"\[\d+ of 1000 tokens: 1 recent items", text(context))

            found = await mcp.call_tool("search_history", {"query": "invoices JSON lines"})
            assert [hit["seq"] for hit in structured(found)["hits"]] == [seq]
            assert text(found).startswith(f"#{seq} assistant ")

            # A tool may name another conversation; append creates it, search does not.
            other = await mcp.call_tool(
                "append_note", {"content": "unrelated", "conversation_id": "second"}
            )
            assert not other.is_error
            missing = await mcp.call_tool(
                "search_history", {"query": "invoices", "conversation_id": "missing"}
            )
            assert missing.is_error and text(missing).startswith("NOT_FOUND: ")

    asyncio.run(scenario())
    with Client(f"127.0.0.1:{service.port}") as client:
        assert [item.content for item in client.list_items("agent").entries] == [note]
        assert client.get_conversation("second").total_items == 1


def test_a_chunk_is_read_and_scrolled(service: Service) -> None:
    async def scenario() -> None:
        async with stdio_mcp(service) as mcp:
            first = await mcp.call_tool(
                "read_file_chunk", {"path": "notes.md", "strategy": "lines", "max_lines": 100}
            )
            assert text(first).startswith(
                "notes.md lines 1-100 of 250 (chunk 1 of 3; more: yes)\nline 1 of the long log\n"
            )
            assert structured(first)["chunk"] == 1

            second = await mcp.call_tool("scroll_file", {"direction": "next"})
            assert text(second).startswith(
                "notes.md lines 101-200 of 250 (chunk 2 of 3; more: yes)\nline 101 of"
            )
            last = await mcp.call_tool("scroll_file", {"line": 230})
            assert text(last).startswith("notes.md lines 201-250 of 250 (chunk 3 of 3; more: no)")
            beyond = await mcp.call_tool("scroll_file", {"direction": "next"})
            assert beyond.is_error and text(beyond).startswith("INVALID_ARGUMENT: ")

    asyncio.run(scenario())


def test_a_search_goes_on_with_the_page_token(service: Service) -> None:
    async def scenario() -> None:
        async with stdio_mcp(service) as mcp:
            first = await mcp.call_tool(
                "search_files",
                {
                    "pattern": "long log",
                    "max_matches_per_file": 100,
                    "page_size": 40,
                    "context_lines": 0,
                },
            )
            page = structured(first)
            assert (page["total_matches"], page["remaining_matches"]) == (100, 60)
            token = page["next_page_token"]
            assert token
            footer = text(first).splitlines()[-1]
            assert footer == (
                "60 more matching lines in 1 file; continue with"
                f' search_files_next_page(page_token="{token}").'
            )
            assert re.search(r"(?m)^1:line 1 of the long log$", text(first))

            second = await mcp.call_tool("search_files_next_page", {"page_token": token})
            assert structured(second)["remaining_matches"] == 20
            assert re.search(r"(?m)^41:line 41 of the long log$", text(second))
            assert not re.search(r"(?m)^1:line 1 of", text(second))

    asyncio.run(scenario())


def test_an_edit_is_applied_and_a_refused_one_says_why(service: Service, workspace: Path) -> None:
    async def scenario() -> None:
        async with stdio_mcp(service) as mcp:
            done = await mcp.call_tool(
                "edit_file",
                {
                    "path": "src/app.py",
                    "search": "return len(prices)",
                    "replace": "return len(list(prices))",
                },
            )
            assert text(done).startswith("Edited src/app.py: the replacement is at lines 6-6")
            assert structured(done)["first_line"] == 6

            refused = await mcp.call_tool(
                "edit_file", {"path": "src/app.py", "search": "return ", "replace": "yield "}
            )
            assert refused.is_error
            assert text(refused).startswith("FAILED_PRECONDITION: ")

    asyncio.run(scenario())
    assert (workspace / "src" / "app.py").read_text() == APP.replace(
        "return len(prices)", "return len(list(prices))"
    )


def test_the_available_tools_follow_the_session_state(service: Service) -> None:
    async def scenario() -> None:
        async with stdio_mcp(service) as mcp:
            before = await mcp.call_tool("available_tools", {})
            # Only this server's tools, under their own names.
            assert set(structured(before)["tools"]) == TOOLS

            viewing = await mcp.call_tool(
                "set_session_state", {"set_states": ["large_file_viewing"]}
            )
            assert structured(viewing)["deciding_state"] == "large_file_viewing"

            after = await mcp.call_tool("available_tools", {"tool": "edit_file"})
            session = structured(after)
            assert set(session["tools"]) == {
                "read_file_chunk",
                "scroll_file",
                "search_files_next_page",
                "get_context",
                "search_history",
                "append_note",
                "available_tools",
                "set_session_state",
            }
            assert session["check"]["allowed"] is False
            assert text(after).startswith("edit_file: not available: ")
            assert "states: large_file_viewing (deciding: large_file_viewing)" in text(after)

            # The rules gate the calls themselves: no edit while a file is being viewed.
            edit = {"path": "src/app.py", "search": "return len(prices)", "replace": "return 0"}
            refused = await mcp.call_tool("edit_file", edit)
            assert refused.is_error and text(refused).startswith(
                "edit_file: not available now: the session state large_file_viewing"
            )
            cleared = await mcp.call_tool("set_session_state", {"clear_all": True})
            assert structured(cleared)["deciding_state"] == ""
            assert not (await mcp.call_tool("edit_file", edit)).is_error

            bad = await mcp.call_tool("set_session_state", {"set_states": ["bogus_state"]})
            assert bad.is_error and text(bad).startswith("INVALID_ARGUMENT: ")

    asyncio.run(scenario())


def test_a_new_conversation_gets_the_workspace_root_asked_for(
    start_service: StartService, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    (other / "project").mkdir(parents=True)
    service = start_service(workspace_root=str(workspace), workspace_allowed_roots=(str(other),))
    project = str(other / "project")

    async def scenario() -> None:
        async with stdio_mcp(service, "--conversation", "own", "--workspace-root", project) as mcp:
            assert {tool.name for tool in (await mcp.list_tools()).tools} == TOOLS

    asyncio.run(scenario())
    with Client(f"127.0.0.1:{service.port}") as client:
        assert client.get_conversation("own").settings.workspace_root == project


# --- the Claude Code recipe of docs/workspace.md ----------------------------------------

RECIPE = (ROOT / "docs" / "workspace.md").read_text().split("**Claude Code.**", 1)[1]
PROJECT = "~/src/my-project"


def recipe_commands() -> list[list[str]]:
    """The recipe's shell commands, continuation lines joined, comments dropped."""
    (block,) = re.findall(r"```sh\n(.*?)```", RECIPE, flags=re.S)[:1]
    lines = [shlex.split(line, comments=True) for line in block.replace("\\\n", " ").splitlines()]
    return [line for line in lines if line]


def claude_mcp_add(commands: list[list[str]]) -> tuple[str, list[str], dict[str, str]]:
    """What `claude mcp add ... NAME -- COMMAND ARGS...` registers: command, args, env."""
    (add,) = [c for c in commands if c[:3] == ["claude", "mcp", "add"]]
    options, command = add[3 : add.index("--")], add[add.index("--") + 1 :]
    env = dict(options[i + 1].split("=", 1) for i, o in enumerate(options) if o == "--env")
    assert options[options.index("--scope") + 1] == "project"
    assert options[-1] == "contextwm"  # the server's name, after the options
    return command[0], command[1:], env


def test_the_claude_code_recipe_works_as_written(tmp_path: Path) -> None:
    """The recipe's commands: its server (`scripts/serve ARGS` is `contextwm serve ARGS`; the
    README's bare `scripts/serve` if it named none), then `.mcp.json`'s command started as
    Claude Code starts it, in the project, with its env. Every file tool works."""
    project = tmp_path / "src" / "my-project"
    (project / "src").mkdir(parents=True)
    (project / "notes.md").write_text(LONG)
    (project / "src" / "app.py").write_text(APP)
    commands = recipe_commands()
    serve = [c for c in commands if c[0] == "scripts/serve"]
    serve_args = serve[0][1:] if serve else []
    serve_args = [str(project) if a == PROJECT else a for a in serve_args]
    # The model is not what this is about: the hashing embedder starts at once.
    server = ServerProcess(tmp_path / "data", *serve_args, "--embedder", "hashing")
    try:
        (config,) = re.findall(r"```json\n(.*?)```", RECIPE, flags=re.S)
        entry = json.loads(config)["mcpServers"]["contextwm"]
        command, args, env = claude_mcp_add(commands)
        assert (entry["command"], entry["args"], entry["env"]) == (command, args, env)
        assert command == "contextwm" and env["CONTEXTWM_TARGET"] == "127.0.0.1:50051"
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "contextwm", *args],
            env={
                **env,
                "CONTEXTWM_TARGET": server.target,
                "PYTHONPATH": PYTHONPATH,
                "HF_HUB_OFFLINE": "1",
            },
            cwd=project,
        )

        async def scenario() -> None:
            async with McpClient(params) as mcp:
                read = await mcp.call_tool("read_file_chunk", {"path": "notes.md"})
                assert text(read).startswith("notes.md lines 1-"), text(read)
                found = await mcp.call_tool("search_files", {"pattern": "return sum"})
                assert "return sum(prices)" in text(found), text(found)
                edit = {"path": "src/app.py", "search": "sum(prices)", "replace": "sum(prices, 0)"}
                assert not (await mcp.call_tool("edit_file", edit)).is_error

        asyncio.run(scenario())
        assert "sum(prices, 0)" in (project / "src" / "app.py").read_text()
        with Client(server.target) as client:
            conversation = client.get_conversation("my-project")
            assert conversation.settings.workspace_root == str(project)
        assert ["cd", PROJECT] in commands  # where `claude mcp add` runs, and so the agent
    finally:
        server.terminate()


def test_a_relative_workspace_is_taken_from_where_the_server_starts(tmp_path: Path) -> None:
    project = tmp_path / "my-project"
    project.mkdir()
    (project / "notes.md").write_text("hello from the project\n")
    server = ServerProcess(
        tmp_path / "data", "--workspace", ".", "--embedder", "hashing", cwd=project
    )
    try:
        with Client(server.target) as client:
            client.create_conversation("c")
            chunk = client.read_file_chunk("c", "notes.md")
            assert chunk.content == "hello from the project\n"
    finally:
        server.terminate()


# --- streamable HTTP --------------------------------------------------------------------


class HttpMcp:
    """`contextwm mcp --transport http --port 0` as a subprocess; `url` is known once it has
    printed the address it listens on."""

    def __init__(self, service: Service) -> None:
        self.output: list[str] = []
        self.url = ""
        self._listening = threading.Event()
        self.proc = subprocess.Popen(
            [sys.executable, *mcp_command(service, "--transport", "http", "--port", "0")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": PYTHONPATH, "HF_HUB_OFFLINE": "1"},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._listening.wait(START_SECONDS) or not self.url:
            self.stop()
            raise RuntimeError("contextwm mcp did not start:\n" + "".join(self.output))

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.output.append(line)
            found = re.search(r"contextwm mcp listening on (http://\S+)", line)
            if found:
                self.url = found.group(1)
                self._listening.set()
        self._listening.set()  # it ended without listening

    def stop(self) -> int:
        """SIGTERM, which uvicorn takes as a graceful shutdown; returns the exit status once
        the output is read to its end."""
        if self.proc.poll() is None:
            self.proc.terminate()
        status = self.proc.wait(30)
        self._reader.join(30)
        return status


@pytest.fixture
def http_mcp(service: Service) -> Iterator[HttpMcp]:
    server = HttpMcp(service)
    yield server
    server.stop()


def test_the_tools_are_served_over_streamable_http(http_mcp: HttpMcp) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", http_mcp.url)

    async def scenario() -> None:
        async with McpClient(http_mcp.url) as mcp:
            assert {tool.name for tool in (await mcp.list_tools()).tools} == TOOLS
            appended = await mcp.call_tool("append_note", {"content": "served over HTTP"})
            assert structured(appended)["seq"] == 1

    asyncio.run(scenario())
    # uvicorn shuts down, then raises the signal it caught again, as its default action.
    assert http_mcp.stop() in (0, -signal.SIGTERM)
    assert "Traceback" not in "".join(http_mcp.output)
