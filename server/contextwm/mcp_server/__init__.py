"""`contextwm mcp`: a Model Context Protocol server in front of a running contextwm.

It is a client of contextwm only (`contextwm_client` over gRPC, never the engine, the model
or the index), so coding agents that speak MCP get contextwm's workspace files and memory
as tools, each working on one conversation.

    tools         the tools over a Client and a conversation, and the MCPServer holding them
    results       the tools' structured results, built from the client's
    render        the text a model reads from each result
    search_pages  searches remembered by page token, so the next page needs only the token
    command       the `contextwm mcp` command: the conversation, then stdio or HTTP
"""

from contextwm.mcp_server.command import run_mcp
from contextwm.mcp_server.search_pages import FileSearch, SearchPages
from contextwm.mcp_server.tools import ConversationTools, build_server, error_result

__all__ = [
    "ConversationTools",
    "FileSearch",
    "SearchPages",
    "build_server",
    "error_result",
    "run_mcp",
]
