"""The command line's grammar: the parser, its commands and flags, and the value parsers."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import NoReturn, TypeVar, get_args

from contextwm_client import (
    Category,
    CategoryBudget,
    Client,
    ContributorType,
    Flag,
    ItemState,
    RetrievalMode,
    Role,
    TruncationStrategy,
)

from contextwm.cli import (
    agent_loop,
    connection,
    conversations,
    erasure,
    mcp_command,
    reembed,
    retention,
    retrieval,
    stats,
    transfer,
)
from contextwm.cli.evaluation.command import add_arguments as add_eval_arguments
from contextwm.cli.evaluation.command import run_eval
from contextwm.cli.importing.command import default_state_dir, run_import
from contextwm.cli.importing.sources import FIELDS, FORMATS

DEFAULT_TARGET = "127.0.0.1:50051"
DEFAULT_NAMESPACE = "default"
# The budget of `context` without --max-tokens: a mid-sized prompt's worth.
DEFAULT_MAX_TOKENS = 4096
# A server loads its embedding model before it is ready: about 10 s on a small machine.
DEFAULT_WAIT_SECONDS = 60.0
TARGET_ENV = "CONTEXTWM_TARGET"
ITEM_STATES: tuple[ItemState, ...] = get_args(ItemState)
TRUNCATE_STRATEGIES: tuple[TruncationStrategy, ...] = get_args(TruncationStrategy)
CATEGORIES: tuple[Category, ...] = get_args(Category)
CONTRIBUTOR_TYPES: tuple[ContributorType, ...] = get_args(ContributorType)
_BUDGET_FORM = "CATEGORY=SHARE[:MIN[:MAX]]"
# Global options that take a value; command_of must skip their values.
_GLOBAL_OPTIONS_WITH_VALUE = frozenset(
    {"--target", "--namespace", "--wait", *connection.OPTIONS_WITH_VALUE}
)

Handler = Callable[[Client, argparse.Namespace], int]
"""A command: runs it with the client and the parsed arguments, returns the exit status."""

_Name = TypeVar("_Name", bound=str)


def build_parser(
    default_target: str, environ: Mapping[str, str] | None = None
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """Builds the parser; returns it and the (still empty) subparsers of the server's flags.

    Args:
        default_target: The server address when --target is not given.
        environ: The environment the API key's and TLS files' defaults come from
            (`contextwm.cli.connection`); None: none.

    Returns:
        The parser, whose commands set `handler` (a Handler), and by command the subparsers
        that take `contextwm serve`'s flags (`serve`, `config show`), which the caller fills
        from `contextwm.serve` only when that command runs.
    """
    # allow_abbrev=False keeps command_of exact: "--tar X" is not taken for "--target X".
    parser = argparse.ArgumentParser(
        prog="contextwm",
        description="Context window manager for LLM agents: client commands and the server.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--target",
        default=default_target,
        help=f"server address, host:port or unix:/path (default ${TARGET_ENV} or {DEFAULT_TARGET})",
    )
    parser.add_argument(
        "--wait",
        type=_seconds,
        default=DEFAULT_WAIT_SECONDS,
        metavar="SECONDS",
        help="how long to wait for a server that is starting or not up yet"
        f" (default {DEFAULT_WAIT_SECONDS:g})",
    )
    # No default here: `retention` tells a namespace given from none (then: every one).
    parser.add_argument("--namespace", help=f"tenant scope (default: {DEFAULT_NAMESPACE})")
    connection.add_connection_arguments(parser, environ or {})
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str,
        handler: Handler,
        help_text: str,
        namespace_help: str = "tenant scope, as before the command",
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text, allow_abbrev=False)
        sub.set_defaults(handler=handler)
        add_global_arguments_again(sub, namespace_help)
        return sub

    sub = command("append", conversations.append, "append an item to a conversation")
    sub.add_argument("conversation")
    sub.add_argument("content", help='the item text; "-" reads it from stdin')
    sub.add_argument("--role", default="user", help=", ".join(get_args(Role)))
    sub.add_argument(
        "--flag", dest="flags", action="append", default=[], metavar="FLAG", help="importance flag"
    )
    sub.add_argument(
        "--meta",
        dest="metadata",
        action="append",
        default=[],
        type=key_value,
        metavar="K=V",
        help="a metadata pair stored with the item; repeatable",
    )
    sub.add_argument(
        "--timestamp", type=timestamp, metavar="ISO", help="ISO 8601 event time (naive = UTC)"
    )
    sub.add_argument(
        "--idempotency-key",
        metavar="KEY",
        help="an append sent again with the same key is stored once (safe retries)",
    )

    sub = command("context", retrieval.context, "print the enhanced context for a query")
    sub.add_argument("conversation")
    sub.add_argument("query", nargs="?", help="the question; omitted: the conversation's focus")
    sub.add_argument(
        "--max-tokens",
        type=int,
        default=DEFAULT_MAX_TOKENS,
        help=f"token budget (default {DEFAULT_MAX_TOKENS})",
    )
    sub.add_argument(
        "--recent-share",
        type=float,
        metavar="SHARE",
        help="a fixed split: this share (0..1) of the budget for the window, the rest for"
        " history (default: relevance decides)",
    )
    sub.add_argument(
        "--max-history-items", type=int, metavar="N", help="ranked candidates to consider"
    )
    sub.add_argument(
        "--neighbors",
        dest="include_neighbors",
        action=argparse.BooleanOptionalAction,
        help="bring a hit's question or answer along (default: yes)",
    )
    _add_ranking_arguments(sub)
    sub.add_argument("--json", action="store_true", help="print the structured result as JSON")
    sub.add_argument(
        "--categories",
        action="store_true",
        help="assemble by category budgets, with contributors and an allocation report",
    )
    _add_budget_arguments(sub, "for this request; implies --categories")
    sub.add_argument(
        "--file",
        dest="files",
        action="append",
        default=[],
        metavar="PATH",
        help="a working file to offer first; implies --categories",
    )

    sub = command("search", retrieval.search, "search archived items (and the window's)")
    sub.add_argument("query")
    sub.add_argument("--conversation", help="one conversation; omitted: the whole namespace")
    sub.add_argument(
        "--top-k", type=int, default=10, metavar="N", help="how many hits to print (default 10)"
    )
    sub.add_argument("--include-window", action="store_true", help="search the window's items too")
    sub.add_argument(
        "--role",
        dest="roles",
        action="append",
        default=[],
        choices=get_args(Role),
        help="only items of this role; repeatable (any of them)",
    )
    sub.add_argument(
        "--flag",
        dest="flags",
        action="append",
        default=[],
        choices=get_args(Flag),
        help="only items with this importance flag; repeatable",
    )
    sub.add_argument("--since", type=timestamp, metavar="ISO", help="items at or after")
    sub.add_argument("--until", type=timestamp, metavar="ISO", help="items before")
    sub.add_argument(
        "--meta",
        dest="metadata",
        action="append",
        default=[],
        type=key_value,
        metavar="K=V",
        help="items with this metadata value",
    )
    _add_ranking_arguments(sub)
    sub.add_argument("--json", action="store_true", help="print the hits as JSON")

    for name, pinning in (("pin", conversations.pin), ("unpin", conversations.unpin)):
        sub = command(name, pinning, f"{name} an item")
        sub.add_argument("conversation")
        sub.add_argument("seq", type=int)

    for name, run, what in (
        ("create", conversations.create, "create a conversation with explicit settings"),
        ("update", conversations.update, "change some settings of a conversation"),
    ):
        sub = command(name, run, what)
        sub.add_argument("conversation")
        sub.add_argument(
            "--window-max-tokens", type=int, metavar="N", help="the window's token limit"
        )
        sub.add_argument("--window-max-items", type=int, metavar="N", help="its item limit")
        sub.add_argument("--encoding", help="cl100k_base or o200k_base")
        sub.add_argument(
            "--adaptive-window",
            action=argparse.BooleanOptionalAction,
            help="adapt the token limit to the conversation's state (coding, debugging: wider)",
        )
        sub.add_argument("--model", help="a model of the server's models table")
        sub.add_argument("--context-limit", type=int, help="the LLM's context limit in tokens")
        sub.add_argument(
            "--reserved-reply-tokens",
            type=int,
            metavar="N",
            help="tokens kept free for the reply (0: the model's)",
        )
        sub.add_argument(
            "--compaction-threshold",
            type=float,
            metavar="RATIO",
            help="the fill of the usable context (0..1] at which compaction is due",
        )
        sub.add_argument(
            "--compaction",
            action=argparse.BooleanOptionalAction,
            help="whether compaction is ever due (--no-compaction: never)",
        )
        sub.add_argument(
            "--workspace-root", metavar="PATH", help="the agent's workspace, an absolute path"
        )
        _add_settings_arguments(sub)
        _add_budget_arguments(sub, "for requests with categories")

    sub = command("get", conversations.get, "show a conversation's settings and statistics")
    sub.add_argument("conversation")

    command("list", conversations.list_conversations, "list the namespace's conversations")

    sub = command("delete", conversations.delete, "delete a conversation and all its items")
    sub.add_argument("conversation")
    sub.add_argument("--receipt", action="store_true", help="print the receipt of what went")

    sub = command(
        "forget",
        erasure.forget,
        "erase for good the items that match (metadata, time), with everything derived from"
        " them, and print the receipt",
    )
    sub.add_argument(
        "conversation", nargs="?", help="one conversation; omitted: every one of the namespace"
    )
    sub.add_argument(
        "--metadata",
        action="append",
        default=[],
        type=key_value,
        metavar="K=V",
        help="items whose metadata has this pair (repeat: all must match)",
    )
    sub.add_argument(
        "--since", type=timestamp, metavar="ISO", help="items at or after this time (naive = UTC)"
    )
    sub.add_argument(
        "--until", type=timestamp, metavar="ISO", help="items before this time (naive = UTC)"
    )
    sub.add_argument("--json", action="store_true", help="print the receipt as JSON")

    sub = command("items", conversations.items, "list a conversation's items")
    sub.add_argument("conversation")
    sub.add_argument(
        "--state",
        dest="states",
        action="append",
        default=[],
        choices=ITEM_STATES,
        help="only items in this state; repeatable (default: all)",
    )

    _add_import_command(command("import", run_import, IMPORT_HELP))

    sub = command(
        "export",
        transfer.export,
        "write conversations as JSON Lines that `contextwm import` restores exactly",
    )
    sub.add_argument(
        "conversation", nargs="?", help="one conversation; omitted: every one of the namespace"
    )
    sub.add_argument(
        "-o", "--output", metavar="FILE", help="write here (whole or not at all); default: stdout"
    )

    add_eval_arguments(
        command(
            "eval",
            run_eval,
            "score the enhanced context on your own labelled queries, beside BM25, dense and"
            " rank fusion on the same items",
        )
    )

    sub = command(
        "stats",
        stats.stats,
        "show what the store holds: items by state, tokens, vectors, index sizes, item times",
    )
    sub.add_argument(
        "conversation", nargs="?", help="one conversation; omitted: every one of the namespace"
    )
    sub.add_argument(
        "--all-namespaces", action="store_true", help="every conversation of every namespace"
    )
    sub.add_argument("--json", action="store_true", help="print the figures as JSON")

    # ---- the agent loop
    def loop_command(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        sub = command(name, handler, help_text)
        sub.add_argument("conversation")
        sub.add_argument("--json", action="store_true", help="print the result as JSON")
        return sub

    sub = loop_command(
        "usage", agent_loop.usage, "show the active context's usage against the limit"
    )
    sub.add_argument(
        "--reported",
        type=int,
        metavar="N",
        help="the provider's input-token count of the last response",
    )

    loop_command("active", agent_loop.active, "print the active context, as the agent sends it")

    sub = loop_command("compact", agent_loop.compact, "compact the active context")
    summary = sub.add_mutually_exclusive_group()
    summary.add_argument("--summary", metavar="TEXT", help="the summary; omitted: extractive")
    summary.add_argument(
        "--summary-file", metavar="PATH", help='read the summary from a file ("-": stdin)'
    )

    sub = loop_command("truncate", agent_loop.truncate, "remove items from the active context")
    sub.add_argument(
        "strategy", choices=TRUNCATE_STRATEGIES, help="what to keep after the first pair"
    )

    sub = loop_command("checkpoint", agent_loop.checkpoint, "create a named checkpoint")
    sub.add_argument("name")

    loop_command("checkpoints", agent_loop.checkpoints, "list a conversation's checkpoints")

    sub = loop_command("restore", agent_loop.restore, "restore a conversation to a checkpoint")
    sub.add_argument("name")

    loop_command(
        "edits", agent_loop.edits, "list the context history: compactions, truncations, ..."
    )

    sub = loop_command("watch", agent_loop.watch, "print a conversation's events until Ctrl-C")
    sub.add_argument(
        "--after",
        type=int,
        default=0,
        metavar="N",
        help="replay the kept events after this event id first (default 0: all kept)",
    )

    # ---- operations
    sub = command(
        "retention",
        retention.retention,
        "apply the retention policies now: to every namespace, one namespace, or one conversation",
        namespace_help="one namespace; omitted (here and before the command): every namespace",
    )
    sub.add_argument("conversation", nargs="?", help="one conversation; omitted: all of them")
    sub.add_argument("--dry-run", action="store_true", help="remove nothing; say what would go")
    sub.add_argument("--json", action="store_true", help="print the result as JSON")

    sub = command(
        "reembed",
        reembed.reembed,
        "re-embed conversations whose vectors come from another embedding model than the"
        " server's (dense search on them is refused until then); Ctrl-C stops, a re-run resumes",
    )
    sub.add_argument(
        "conversation", nargs="?", help="one conversation; omitted: the whole namespace"
    )
    sub.add_argument("--all", action="store_true", help="every conversation of every namespace")
    sub.add_argument("--json", action="store_true", help="print each progress report as JSON")

    # ---- agents
    sub = command(
        "mcp",
        mcp_command.mcp,
        "run an MCP server for coding agents in front of the contextwm at --target: tools"
        " to read, search and edit workspace files and to use one conversation's memory",
    )
    sub.add_argument(
        "--conversation",
        required=True,
        metavar="ID",
        help="the conversation every tool works on (a tool may name another); created on"
        " start if missing",
    )
    sub.add_argument(
        "--workspace-root",
        type=Path,
        metavar="DIR",
        help="the conversation's workspace if it is created, a directory the server allows"
        " (relative: to the current directory); default: the server's own",
    )
    sub.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default): the client starts this command; http: serve streamable HTTP"
        " at http://HOST:PORT/mcp",
    )
    sub.add_argument("--host", help="http: the address to listen on (default 127.0.0.1)")
    sub.add_argument(
        "--port",
        type=int,
        help="http: the port (default 8000; 0: a free one, printed on stderr)",
    )
    sub.add_argument(
        "--log-level",
        choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
        default="WARNING",
        help="of the MCP server's log, on stderr (default WARNING)",
    )

    # Its arguments come from contextwm.serve, added by the entry point only when it runs.
    serve = commands.add_parser("serve", help="run the contextwm server")
    # Run by contextwm.config_show, with serve's flags: no client, no server.
    config = commands.add_parser(
        "config",
        help="show the settings `contextwm serve` would run with",
        description="The server's settings, from its flags, environment and config file.",
        allow_abbrev=False,
    )
    show = config.add_subparsers(dest="config_command", required=True, metavar="SUBCOMMAND")
    show_settings = show.add_parser(
        "show",
        help="print the effective settings and where each came from",
        description="Prints every setting `contextwm serve` would run with, given the same"
        " flags and environment, and where each came from: default, the --config file,"
        " an environment variable (CONTEXTWM_...) or a flag; flags win over the environment,"
        " the environment over the file.",
        allow_abbrev=False,
    )
    # Run by contextwm.check, on files: no client, no server.
    sub = commands.add_parser(
        "check",
        help="check a data directory offline (exit 0 healthy, 1 problems, 2 not checked)",
        description="Checks a data directory no server is running on, without changing it:"
        " the SQLite store's integrity and schema, every conversation's items, seqs, window"
        " and vectors, and the index files against the stored vectors.",
        allow_abbrev=False,
    )
    _add_data_dir_arguments(sub)
    sub.add_argument("--verbose", action="store_true", help="list every conversation")
    # Run by contextwm.move: a data directory and a database, no server.
    sub = commands.add_parser(
        "move",
        help="copy a data directory's store into PostgreSQL, resumably, and check the copy",
        description="Copies every conversation of a data directory no server is running on"
        " into a PostgreSQL database, with its stored vectors, each in one transaction; run"
        " again after an interruption to copy the rest. Every conversation is read back from"
        " the database and compared (exit 0 identical, 1 differences, 2 not moved).",
        allow_abbrev=False,
    )
    _add_data_dir_arguments(sub)
    sub.add_argument(
        "--to", required=True, metavar="URL", help="the database: postgresql://user:pw@host/db"
    )
    _add_keys_command(commands)
    return parser, {"serve": serve, "config": show_settings}


def _add_data_dir_arguments(sub: argparse.ArgumentParser) -> None:
    """--data-dir DIR, as `serve` and `keys` take it; DIR alone still works (the older form).
    `data_dir_of` settles the two."""
    sub.add_argument(
        "--data-dir", type=Path, metavar="DIR", help="the data directory, the server's --data-dir"
    )
    sub.add_argument(
        "data_dir_argument",
        nargs="?",
        type=Path,
        metavar="DIR",
        help="the same, without --data-dir (the older form)",
    )


def data_dir_of(args: argparse.Namespace) -> Path:
    """The data directory of `check` or `move`: --data-dir, or DIR alone.

    Raises:
        ValueError: neither given, or both given and different.
    """
    option, argument = args.data_dir, args.data_dir_argument
    if option is None and argument is None:
        raise ValueError("give the data directory: --data-dir DIR")
    if option is not None and argument is not None and option != argument:
        raise ValueError(f"two data directories: --data-dir {option} and {argument}")
    found: Path = option if option is not None else argument
    return found


def add_global_arguments_again(sub: argparse.ArgumentParser, namespace_help: str) -> None:
    """Adds --target, --wait, --namespace and the connection options to a client command, so
    that they may come after it too (`contextwm import --target HOST:PORT FILE`). Their
    default is SUPPRESS: given only before the command, or not at all, the value before it
    (or its default) stays."""
    sub.add_argument(
        "--target",
        default=argparse.SUPPRESS,
        help="server address, host:port or unix:/path, as before the command",
    )
    sub.add_argument(
        "--wait",
        type=_seconds,
        default=argparse.SUPPRESS,
        metavar="SECONDS",
        help="how long to wait for a server that is starting, as before the command",
    )
    sub.add_argument("--namespace", default=argparse.SUPPRESS, help=namespace_help)
    connection.add_connection_arguments(sub, None)


class OneLineErrors(argparse.ArgumentParser):
    """A parser whose usage errors are one line on stderr (exit 2) rather than the usage
    followed by the error: for commands whose output scripts read, such as `keys create`."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see --help)\n")


def _add_keys_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`contextwm keys ACTION`, run by contextwm.access.cli: offline on a data directory or a
    database, beside a server running on it or not."""
    keys = commands.add_parser(
        "keys",
        help="create, list, revoke and rotate API keys (--data-dir, --store or --server)",
        description="Manages the API keys a server checks when it requires them. Works on a"
        " data directory's store (created if missing, so the first admin key can be made"
        " before the server ever ran) or a PostgreSQL database, while a server runs on it"
        " or not, or through a running server with an admin key. Exit 0 done, 1 refused (an"
        " unknown or revoked key, ...), 2 bad input.",
        allow_abbrev=False,
    )
    actions = keys.add_subparsers(
        dest="keys_command", required=True, metavar="ACTION", parser_class=OneLineErrors
    )
    # Where the keys are: a store opened here, or a running server over gRPC.
    where = OneLineErrors(add_help=False)
    store = where.add_mutually_exclusive_group(required=True)
    store.add_argument(
        "--data-dir", type=Path, metavar="DIR", help="a data directory: the SQLite store in it"
    )
    store.add_argument(
        "--store", metavar="URL", help="a PostgreSQL store: postgresql://user:pw@host/db"
    )
    store.add_argument(
        "--server",
        metavar="HOST:PORT",
        help="a running server, over gRPC, with --api-key (an admin key for '*') and the"
        " --tls-* options as other commands take them",
    )
    connection.add_connection_arguments(where, None)
    where.add_argument(
        "--audit-log",
        metavar="FILE",
        help="with --data-dir or --store: append a JSON line per change to FILE, the server's"
        " audit_log (a server records the changes made through it itself)",
    )

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        return actions.add_parser(
            name, parents=[where], help=help_text, description=help_text, allow_abbrev=False
        )

    sub = action(
        "create", "create a key; its token goes to stdout alone, once (the store keeps a digest)"
    )
    sub.add_argument("--name", required=True, help="what the key is for (up to 200 characters)")
    sub.add_argument("--role", required=True, metavar="read|write|admin", help="what it may do")
    sub.add_argument(
        "--namespace",
        dest="namespaces",
        action="append",
        required=True,
        metavar="NS",
        help='a namespace it may touch, a prefix ending in "/", or "*" for all; repeatable',
    )
    sub.add_argument(
        "--expires",
        metavar="WHEN",
        help="when it stops working: 30d, 12h, 90m from now, or a UTC date or time"
        " (2027-01-31, 2027-01-31T12:00); default never",
    )
    sub = action("list", "list the keys (never their tokens), revoked and expired ones too")
    sub.add_argument("--json", action="store_true", help="one JSON object per line")
    sub = action("revoke", "revoke a key: its token stops working at once")
    sub.add_argument("key_id", metavar="KEY_ID")
    sub = action("rotate", "give a key a new token (to stdout, once); the old one stops working")
    sub.add_argument("key_id", metavar="KEY_ID")


IMPORT_HELP = (
    "import timelines (JSON Lines of items, OpenAI chat records, ChatGPT and Claude exports)"
    " into the server, or restore what `contextwm export` wrote"
)


def _add_import_command(sub: argparse.ArgumentParser) -> None:
    # Set by the entry point's Ctrl-C: the import then ends cleanly (see ImportRun).
    sub.set_defaults(stop=threading.Event())
    sub.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help='files to import, in order ("-" reads standard input; .gz files are read directly)',
    )
    sub.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help='items: one item a line; openai: chat records ({"messages": [...]}) as JSON'
        " Lines or a .json file; export: what `contextwm export` wrote, restored exactly;"
        " chatgpt, claude: the conversations.json of a ChatGPT or Claude data export (or"
        " the export's .zip), a conversation a chat; auto (default): files that start as an"
        " export are one, .json files are chat records, and each line is a chat record if it"
        " has messages, else an item",
    )
    sub.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="FIELD=INPUT_FIELD",
        help="read an item field from another input field (dotted for nested ones), e.g."
        " --map role=author.role --map content=message.text (role: a field holding roles, not"
        " names); fields: " + ", ".join(FIELDS),
    )
    sub.add_argument(
        "--conversation-field",
        metavar="NAME",
        help="chat records: the field holding the conversation id (default: conversation_id,"
        " then id; else an id is derived from the messages)",
    )
    sub.add_argument("--strict", action="store_true", help="stop at the first bad line")
    sub.add_argument(
        "--chunk-size", type=int, default=256, help="items per message of the stream (1..1000)"
    )
    sub.add_argument(
        "--segment-items",
        type=int,
        default=20_000,
        help="items per call (default 20000); the resume point follows the server's answers",
    )
    sub.add_argument(
        "--state-dir",
        type=Path,
        default=default_state_dir(),
        help="where resume points are kept (default ~/.local/state/contextwm/imports)",
    )
    sub.add_argument(
        "--restart", action="store_true", help="ignore resume points: send each input whole"
    )
    sub.add_argument(
        "--retry-seconds",
        type=float,
        default=120.0,
        help="how long to wait for a server that becomes unavailable, then go on (default 120)",
    )


def command_of(arguments: Sequence[str]) -> str | None:
    """Returns the subcommand: the first argument that is neither an option nor its value."""
    skip_value = False
    for argument in arguments:
        if skip_value:
            skip_value = False
        elif argument in _GLOBAL_OPTIONS_WITH_VALUE:
            skip_value = True
        elif not argument.startswith("-"):
            return argument
    return None


def _add_ranking_arguments(sub: argparse.ArgumentParser) -> None:
    """How candidates are found and ranked: the options context and search share."""
    sub.add_argument("--mode", choices=get_args(RetrievalMode), help="default: hybrid")
    sub.add_argument(
        "--similarity-threshold",
        type=float,
        metavar="SIM",
        help="the least similarity of a candidate without matching words",
    )
    sub.add_argument(
        "--as-of",
        type=timestamp,
        metavar="ISO",
        help="when the question is asked, for time words such as 'last week'",
    )
    sub.add_argument(
        "--time-hints",
        action=argparse.BooleanOptionalAction,
        help="read time words in the query (default: yes)",
    )


def _add_settings_arguments(sub: argparse.ArgumentParser) -> None:
    """The conversation settings besides the window, model and budgets."""
    sub.add_argument(
        "--recency-half-life-seconds",
        type=float,
        metavar="S",
        help="recency halves every S seconds of the conversation's time",
    )
    sub.add_argument(
        "--recency-half-life-items",
        type=float,
        metavar="N",
        help="... and every N items appended since (0: off)",
    )
    sub.add_argument(
        "--focus-items", type=int, metavar="N", help="the newest items that make up the focus"
    )
    sub.add_argument(
        "--similarity-threshold",
        type=float,
        metavar="SIM",
        help="dense mode: the least cosine similarity of a hit",
    )
    sub.add_argument(
        "--detect-importance",
        action=argparse.BooleanOptionalAction,
        help="flag errors, code, questions and solutions as items arrive",
    )
    sub.add_argument(
        "--recency-weight", type=float, metavar="W", help="the window score's recency weight 0..1"
    )
    sub.add_argument(
        "--similarity-weight",
        type=float,
        metavar="W",
        help="the window score's weight of similarity to the focus",
    )
    sub.add_argument(
        "--mask-tool-outputs-after-turns",
        type=int,
        metavar="N",
        help="tool outputs N assistant turns old show as a placeholder (0: off)",
    )
    sub.add_argument(
        "--replace-duplicate-reads",
        action=argparse.BooleanOptionalAction,
        help="a file read again whole replaces its earlier copies with a notice",
    )
    sub.add_argument(
        "--recent-min-items",
        type=int,
        metavar="N",
        help="newest window items every enhanced context keeps (at most a quarter of it)",
    )
    sub.add_argument(
        "--protected-tail-items",
        type=int,
        metavar="N",
        help="the newest items no append evicts (default 20)",
    )
    sub.add_argument(
        "--protected-tail-share",
        type=float,
        metavar="SHARE",
        help="... while they take at most this share of the window's limits (default 0.5)",
    )
    sub.add_argument(
        "--retention-max-age-seconds", type=float, metavar="S", help="archived items older go"
    )
    sub.add_argument(
        "--retention-max-archived-items",
        type=int,
        metavar="N",
        help="beyond this many archived items, the oldest go",
    )
    sub.add_argument(
        "--retention-inactive-seconds",
        type=float,
        metavar="S",
        help="the whole conversation goes after this long without activity",
    )
    sub.add_argument(
        "--retention-remove-pinned",
        action=argparse.BooleanOptionalAction,
        help="whether the age and count limits may remove pinned items (default: no)",
    )


def _add_budget_arguments(sub: argparse.ArgumentParser, scope: str) -> None:
    sub.add_argument(
        "--budget",
        dest="budgets",
        action="append",
        default=[],
        type=budget,
        metavar=_BUDGET_FORM,
        help=f"a category's shares 0..1 ({', '.join(CATEGORIES)}); an empty part is left "
        f"unchanged; {scope}",
    )
    sub.add_argument(
        "--weight",
        dest="weights",
        action="append",
        default=[],
        type=weight,
        metavar="TYPE=W",
        help=f"a contributor weight 0..1 ({', '.join(CONTRIBUTOR_TYPES)}); {scope}",
    )


def _name_value(text: str, names: tuple[_Name, ...], what: str, form: str) -> tuple[_Name, str]:
    """Splits NAME=VALUE and returns the name as the member of `names` it equals."""
    name, separator, value = text.partition("=")
    if not separator:
        raise argparse.ArgumentTypeError(f"expected {form}, got {text!r}")
    for known in names:
        if name == known:
            return known, value
    raise argparse.ArgumentTypeError(f"unknown {what} {name!r}; expected one of {', '.join(names)}")


def budget(text: str) -> CategoryBudget:
    """Parses --budget CATEGORY=SHARE[:MIN[:MAX]]; an empty share is None (left unchanged)."""
    category, value = _name_value(text, CATEGORIES, "category", _BUDGET_FORM)
    try:
        shares = [float(part) if part else None for part in value.split(":")]
    except ValueError:
        shares = []
    if not 1 <= len(shares) <= 3:
        raise argparse.ArgumentTypeError(f"expected {_BUDGET_FORM}, got {text!r}")
    return CategoryBudget(category, *shares)


def weight(text: str) -> tuple[ContributorType, float]:
    """Parses --weight TYPE=W."""
    contributor_type, value = _name_value(text, CONTRIBUTOR_TYPES, "contributor type", "TYPE=W")
    try:
        return contributor_type, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected TYPE=W, got {text!r}") from None


def key_value(text: str) -> tuple[str, str]:
    """Parses --meta KEY=VALUE; the value may be empty, the key may not."""
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def timestamp(text: str) -> datetime:
    """Parses --timestamp as ISO 8601."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None


def _seconds(text: str) -> float:
    """Parses a duration in seconds: a finite number, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds (0 or more), got {text!r}")
    return value
