"""The `contextwm` command line: client commands for people, `mcp` for coding agents, `serve`
to run the server, `config show` to print the settings it would run with, and `check` to
check a data directory offline.

Client commands use only `contextwm_client` and the standard library; `mcp` adds the MCP SDK;
`serve`, `config show` and `check` import the server (and `serve` and `check` the model and
index libraries). All of them are imported lazily, so `contextwm search ...` starts fast and
works without them.

    entry          main(): parse, hand `serve`, `config show` and `check` on, run a command,
                   exit status
    parser         the argparse grammar and the value parsers (budgets, weights, K=V, times)
    connection     --api-key and --tls-*, from flags or the environment, as the client's arguments
    conversations  append, pin, unpin, create, update, get, list, delete, items
    retrieval      context, search
    stats          stats
    agent_loop     usage, active, compact, truncate, checkpoint(s), restore, edits, watch
    reembed        reembed
    mcp_command    mcp (the MCP server itself is contextwm.mcp_server, imported when it runs)
    retention      retention
    render         text lines and blocks, and JSON
"""

from contextwm.cli.entry import main

__all__ = ["main"]
