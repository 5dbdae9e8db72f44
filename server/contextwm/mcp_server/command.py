"""`contextwm mcp`: makes sure the conversation exists, then serves the tools over stdio or
streamable HTTP until the client goes away (stdio) or the process is interrupted (HTTP)."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path
from typing import Any, TextIO

import uvicorn
from contextwm_client import AlreadyExistsError, Client, ConversationSettings
from mcp.server.mcpserver import MCPServer

from contextwm.mcp_server.tools import LogLevel, build_server

DEFAULT_HTTP_PORT = 8000
"""The port of `--transport http` without --port (the MCP SDK's own default)."""

HTTP_PATH = "/mcp"
"""Where the streamable HTTP endpoint is served."""


def run_mcp(client: Client, args: argparse.Namespace, stderr: TextIO = sys.stderr) -> int:
    """Runs `contextwm mcp` with a connected client.

    Args:
        client: The contextwm client; its namespace is the conversation's.
        args: conversation, workspace_root (or None), transport ("stdio" or "http"),
            host and port (None unless given), log_level.
        stderr: Where the HTTP address and notes go; stdout is the stdio transport's.

    Returns:
        0 once the server stops.

    Raises:
        ValueError: --host or --port given with the stdio transport, or a port out of range.
        ContextWMError: The conversation could not be created or read.
    """
    http = args.transport == "http"
    if not http and (args.host is not None or args.port is not None):
        raise ValueError("--host and --port apply to --transport http only")
    port = DEFAULT_HTTP_PORT if args.port is None else args.port
    if not 0 <= port <= 65535:
        raise ValueError(f"--port must be 0..65535, got {port}")
    workspace_root = None if args.workspace_root is None else _absolute(args.workspace_root)
    ensure_conversation(client, args.conversation, workspace_root, stderr)
    log_level: LogLevel = args.log_level
    server = build_server(client, args.conversation, log_level=log_level)
    if http:
        serve_http(server, args.host or "127.0.0.1", port, log_level, stderr)
    else:
        server.run("stdio")
    return 0


def ensure_conversation(
    client: Client, conversation_id: str, workspace_root: str | None, stderr: TextIO
) -> None:
    """Creates the conversation unless it exists; says so when an existing one has another
    workspace than the one asked for (a workspace is chosen at creation only).

    Args:
        client: The contextwm client.
        conversation_id: The conversation.
        workspace_root: Its workspace if it is created, an absolute directory the server
            allows; None: the server's own.
        stderr: Where the note on another workspace goes.

    Raises:
        ContextWMError: The server refused the conversation (an id or a workspace it does
            not allow: InvalidArgumentError, PermissionDeniedError) or is unreachable.
    """
    settings = (
        None if workspace_root is None else ConversationSettings(workspace_root=workspace_root)
    )
    try:
        client.create_conversation(conversation_id, settings=settings)
    except AlreadyExistsError:
        if workspace_root is None:
            return
        existing = client.get_conversation(conversation_id).settings.workspace_root or ""
        if existing != workspace_root:
            shown = existing or "the server's own"
            print(
                f"contextwm mcp: conversation {conversation_id!r} exists with workspace"
                f" {shown}; --workspace-root {workspace_root} applies to new conversations only",
                file=stderr,
            )


def serve_http(
    server: MCPServer[Any], host: str, port: int, log_level: LogLevel, stderr: TextIO
) -> None:
    """Serves streamable HTTP at http://host:port/mcp until interrupted.

    The socket is bound here, before serving, so that port 0 works: the line announcing the
    address names the port the system chose.

    Args:
        server: The MCP server.
        host: The address to listen on; loopback names get DNS-rebinding protection.
        port: The port; 0 picks a free one.
        log_level: uvicorn's log level.
        stderr: Where `contextwm mcp listening on URL` is printed once the socket is bound.

    Raises:
        OSError: The address cannot be bound.
    """
    # The app checks Host and Origin headers against the host it is told it serves.
    app = server.streamable_http_app(host=host, streamable_http_path=HTTP_PATH)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.create_server((host, port), family=family)
    try:
        bound = listener.getsockname()[1]
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        print(f"contextwm mcp listening on http://{shown}:{bound}{HTTP_PATH}", file=stderr)
        stderr.flush()
        config = uvicorn.Config(app, log_level=log_level.lower())
        uvicorn.Server(config).run(sockets=[listener])
    finally:
        listener.close()


def _absolute(path: Path) -> str:
    # Relative to where the agent started the server; not resolved, so that the server
    # itself judges symlinks against its allowed roots.
    return os.path.abspath(path)
