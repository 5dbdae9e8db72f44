"""The mcp command: hands the client and the arguments to `contextwm.mcp_server`, imported
only when it runs, since the MCP SDK (pydantic, starlette, uvicorn) would slow every other
command's start."""

from __future__ import annotations

import argparse

from contextwm_client import Client


def mcp(client: Client, args: argparse.Namespace) -> int:
    from contextwm.mcp_server import run_mcp

    return run_mcp(client, args)
