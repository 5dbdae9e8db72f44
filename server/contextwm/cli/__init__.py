"""The `contextwm` command line: client commands for people, and `serve` to run the server.

Client commands use only `contextwm_client` and the standard library; `serve` imports the
server (and with it the model and index libraries) lazily, so `contextwm search ...` starts
fast and works without them.

    entry          main(): parse, hand `serve` to contextwm.serve, run a command, exit status
    parser         the argparse grammar and the value parsers (budgets, weights, K=V, times)
    conversations  append, pin, unpin, create, update, get, list, delete, items
    retrieval      context, search
    agent_loop     usage, active, compact, truncate, checkpoint(s), restore, edits, watch
    render         text lines and blocks, and JSON
"""

from contextwm.cli.entry import main

__all__ = ["main"]
