"""The `contextwm` command line: client commands for people, and `serve` to run the server.

Client commands use only `contextwm_client`; `serve` imports the server (and with it the model
and index libraries) lazily, so `contextwm search ...` starts fast and works without them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from contextwm_client import (
    Client,
    ContextWMError,
    Conversation,
    ConversationSettings,
    Item,
    ScoredItem,
    WindowStats,
)

DEFAULT_TARGET = "127.0.0.1:50051"
TARGET_ENV = "CONTEXTWM_TARGET"
ITEM_STATES = ("window", "archived", "compacted", "reverted")
# Global options that take a value; the command scan in main() must skip their values.
_GLOBAL_OPTIONS_WITH_VALUE = frozenset({"--target", "--namespace"})
_PREVIEW_CHARS = 80

Handler = Callable[[Client, argparse.Namespace], int]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line.

    Args:
        argv: Arguments without the program name; None reads sys.argv.

    Returns:
        The exit status: 0 on success, 1 when a call fails, 2 for usage errors.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    # The environment is read here only; everything below gets the value passed in.
    parser, serve_parser = _build_parser(os.environ.get(TARGET_ENV, DEFAULT_TARGET))
    serving = _command_of(arguments) == "serve"
    if serving:
        # Imported only on this path: the server pulls in torch and faiss.
        from contextwm.serve import add_serve_arguments

        add_serve_arguments(serve_parser)
    try:
        args = parser.parse_args(arguments)
    except SystemExit as exc:  # usage errors (2) and --help (0) end here, not in the caller
        return exc.code if isinstance(exc.code, int) else 2
    if serving:
        from contextwm.serve import run_serve

        return run_serve(args)
    handler: Handler = args.handler
    try:
        with Client(args.target, namespace=args.namespace) as client:
            return handler(client, args)
    except ContextWMError as exc:
        print(f"error: {exc.code}: {exc.details}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _command_of(arguments: Sequence[str]) -> str | None:
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


# ---------------------------------------------------------------- parser


def _build_parser(default_target: str) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """Builds the parser; returns it and the (still empty) `serve` subparser."""
    # allow_abbrev=False keeps _command_of exact: "--tar X" is not taken for "--target X".
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
    parser.add_argument("--namespace", default="default", help="tenant scope (default: default)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text, allow_abbrev=False)
        sub.set_defaults(handler=handler)
        return sub

    sub = command("append", _append, "append an item to a conversation")
    sub.add_argument("conversation")
    sub.add_argument("content", help='the item text; "-" reads it from stdin')
    sub.add_argument("--role", default="user", help="user, assistant, system, tool, file, error")
    sub.add_argument(
        "--flag", dest="flags", action="append", default=[], metavar="FLAG", help="importance flag"
    )
    sub.add_argument(
        "--meta", dest="metadata", action="append", default=[], type=_key_value, metavar="K=V"
    )
    sub.add_argument(
        "--timestamp", type=_timestamp, metavar="ISO", help="ISO 8601 event time (naive = UTC)"
    )
    sub.add_argument("--idempotency-key", metavar="KEY")

    sub = command("context", _context, "print the enhanced context for a query")
    sub.add_argument("conversation")
    sub.add_argument("query", nargs="?", help="the question; omitted: the conversation's focus")
    sub.add_argument("--max-tokens", type=int, required=True, help="token budget")
    sub.add_argument("--json", action="store_true", help="print the structured result as JSON")

    sub = command("search", _search, "search archived items")
    sub.add_argument("query")
    sub.add_argument("--conversation", help="one conversation; omitted: the whole namespace")
    sub.add_argument("--top-k", type=int, default=10)
    sub.add_argument("--json", action="store_true", help="print the hits as JSON")

    for name, pinned in (("pin", True), ("unpin", False)):
        sub = command(name, _pin if pinned else _unpin, f"{name} an item")
        sub.add_argument("conversation")
        sub.add_argument("seq", type=int)

    sub = command("create", _create, "create a conversation with explicit settings")
    sub.add_argument("conversation")
    sub.add_argument("--window-max-tokens", type=int)
    sub.add_argument("--window-max-items", type=int)
    sub.add_argument("--encoding", help="cl100k_base or o200k_base")
    sub.add_argument("--adaptive-window", action=argparse.BooleanOptionalAction)

    sub = command("get", _get, "show a conversation's settings and statistics")
    sub.add_argument("conversation")

    command("list", _list, "list the namespace's conversations")

    sub = command("delete", _delete, "delete a conversation and all its items")
    sub.add_argument("conversation")

    sub = command("items", _items, "list a conversation's items")
    sub.add_argument("conversation")
    sub.add_argument("--state", dest="states", action="append", default=[], choices=ITEM_STATES)

    # Its arguments come from contextwm.serve, added in main() only when it runs.
    serve = commands.add_parser("serve", help="run the contextwm server")
    return parser, serve


def _key_value(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not separator or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _timestamp(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None


# ---------------------------------------------------------------- commands


def _append(client: Client, args: argparse.Namespace) -> int:
    content = sys.stdin.read() if args.content == "-" else args.content
    result = client.append(
        args.conversation,
        content,
        role=args.role,
        timestamp=args.timestamp,
        flags=args.flags,
        metadata=dict(args.metadata),
        idempotency_key=args.idempotency_key,
    )
    flags = f"; flags: {', '.join(result.flags)}" if result.flags else ""
    duplicate = " (duplicate: returned the earlier append)" if result.duplicate else ""
    print(f"appended seq {result.seq} ({result.token_count} tokens{flags}){duplicate}")
    if result.evicted_seqs:
        print(f"archived: {', '.join(str(seq) for seq in result.evicted_seqs)}")
    print(f"window: {_window(result.window)}")
    return 0


def _context(client: Client, args: argparse.Namespace) -> int:
    context = client.get_context(args.conversation, args.query, max_tokens=args.max_tokens)
    print(_json(context) if args.json else context.text)
    return 0


def _search(client: Client, args: argparse.Namespace) -> int:
    result = client.search(args.query, conversation_id=args.conversation, top_k=args.top_k)
    if args.json:
        print(_json(result))
    elif not result.hits:
        print("no hits", file=sys.stderr)
    else:
        for hit in result.hits:
            print(_scored_line(hit))
    return 0


def _pin(client: Client, args: argparse.Namespace) -> int:
    item = client.pin(args.conversation, args.seq)
    print(f"pinned {item.conversation_id}#{item.seq}")
    return 0


def _unpin(client: Client, args: argparse.Namespace) -> int:
    item = client.unpin(args.conversation, args.seq)
    print(f"unpinned {item.conversation_id}#{item.seq}")
    return 0


def _create(client: Client, args: argparse.Namespace) -> int:
    settings = ConversationSettings(
        window_max_tokens=args.window_max_tokens,
        window_max_items=args.window_max_items,
        encoding=args.encoding,
        adaptive_window=args.adaptive_window,
    )
    _print_conversation(client.create_conversation(args.conversation, settings=settings))
    return 0


def _get(client: Client, args: argparse.Namespace) -> int:
    _print_conversation(client.get_conversation(args.conversation))
    return 0


def _list(client: Client, args: argparse.Namespace) -> int:
    for conversation in client.iter_conversations():
        last = conversation.last_item_at.isoformat() if conversation.last_item_at else "-"
        print(
            f"{conversation.conversation_id}\t{conversation.total_items} items\t"
            f"{conversation.state}\tlast {last}"
        )
    return 0


def _delete(client: Client, args: argparse.Namespace) -> int:
    deleted = client.delete_conversation(args.conversation)
    print(f"deleted {args.conversation} ({deleted} items)")
    return 0


def _items(client: Client, args: argparse.Namespace) -> int:
    for item in client.iter_items(args.conversation, states=args.states):
        print(_item_line(item))
    return 0


# ---------------------------------------------------------------- output


def _window(window: WindowStats) -> str:
    return (
        f"{window.item_count}/{window.item_limit} items, "
        f"{window.token_count}/{window.token_limit} tokens"
    )


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW_CHARS else flat[: _PREVIEW_CHARS - 1] + "…"


def _item_line(item: Item) -> str:
    flags = ",".join(item.flags) or "-"
    return (
        f"{item.seq}\t{item.state}\t{item.role}\t{item.token_count} tok\t{flags}\t"
        f"{_preview(item.content)}"
    )


def _scored_line(hit: ScoredItem) -> str:
    return (
        f"{hit.item.conversation_id}#{hit.seq}\t{hit.score:.3f}\t{hit.role}\t"
        f"{hit.timestamp.isoformat()}\t{_preview(hit.content)}"
    )


def _print_conversation(conversation: Conversation) -> None:
    settings = dataclasses.asdict(conversation.settings)
    lines = {
        "conversation": f"{conversation.namespace}/{conversation.conversation_id}",
        "state": conversation.state,
        "items": f"{conversation.total_items} ({conversation.archived_items} archived, "
        f"last seq {conversation.last_seq})",
        "window": _window(conversation.window),
        "created": conversation.created_at.isoformat(),
        "last item": conversation.last_item_at.isoformat() if conversation.last_item_at else "-",
        "pending embeddings": str(conversation.pending_embeddings),
        **{name.replace("_", " "): str(value) for name, value in settings.items()},
    }
    width = max(len(name) for name in lines)
    for name, value in lines.items():
        print(f"{name:<{width}}  {value}")


def _json(value: Any) -> str:
    """Renders a result dataclass as indented JSON (datetimes as ISO 8601)."""

    def default(obj: object) -> str:
        if isinstance(obj, datetime):
            return obj.isoformat()
        raise TypeError(f"not JSON serialisable: {type(obj).__name__}")

    return json.dumps(dataclasses.asdict(value), indent=2, ensure_ascii=False, default=default)


if __name__ == "__main__":
    sys.exit(main())
