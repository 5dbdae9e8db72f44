"""The `contextwm` command line: client commands for people, `serve` to run the server and
`check` to check a data directory offline.

Client commands use only `contextwm_client` and the standard library; `serve` and `check`
import the server (and with it the model and index libraries) lazily, so `contextwm search
...` starts fast and works without them.

    entry          main(): parse, hand `serve` and `check` on, run a command, exit status
    parser         the argparse grammar and the value parsers (budgets, weights, K=V, times)
    conversations  append, pin, unpin, create, update, get, list, delete, items
    retrieval      context, search
    agent_loop     usage, active, compact, truncate, checkpoint(s), restore, edits, watch
    render         text lines and blocks, and JSON
"""

from contextwm.cli.entry import main

__all__ = ["main"]
