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
from typing import Any, TextIO

from contextwm_client import (
    ActiveEntry,
    AllocationReport,
    CategoryBudget,
    CategoryOptions,
    Checkpoint,
    Client,
    Compaction,
    ContextEdit,
    ContextWMError,
    Conversation,
    ConversationSettings,
    Event,
    Item,
    ScoredItem,
    Usage,
    WindowStats,
)

DEFAULT_TARGET = "127.0.0.1:50051"
TARGET_ENV = "CONTEXTWM_TARGET"
ITEM_STATES = ("window", "archived", "compacted", "reverted")
TRUNCATE_STRATEGIES = ("none", "last_two", "half", "quarter")
CATEGORIES = ("system", "context", "dialog", "system_output")
CONTRIBUTOR_TYPES = ("working_files", "retrieval", "codebase_map", "project_docs")
_BUDGET_FORM = "CATEGORY=SHARE[:MIN[:MAX]]"
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
    except ValueError as exc:  # refused by the client before any call (a budget given twice)
        print(f"error: {exc}", file=sys.stderr)
        return 2
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

    sub = command("search", _search, "search archived items")
    sub.add_argument("query")
    sub.add_argument("--conversation", help="one conversation; omitted: the whole namespace")
    sub.add_argument("--top-k", type=int, default=10)
    sub.add_argument("--json", action="store_true", help="print the hits as JSON")

    for name, pinned in (("pin", True), ("unpin", False)):
        sub = command(name, _pin if pinned else _unpin, f"{name} an item")
        sub.add_argument("conversation")
        sub.add_argument("seq", type=int)

    for name, run, what in (
        ("create", _create, "create a conversation with explicit settings"),
        ("update", _update, "change some settings of a conversation"),
    ):
        sub = command(name, run, what)
        sub.add_argument("conversation")
        sub.add_argument("--window-max-tokens", type=int)
        sub.add_argument("--window-max-items", type=int)
        sub.add_argument("--encoding", help="cl100k_base or o200k_base")
        sub.add_argument("--adaptive-window", action=argparse.BooleanOptionalAction)
        sub.add_argument("--model", help="a model of the server's models table")
        sub.add_argument("--context-limit", type=int, help="the LLM's context limit in tokens")
        sub.add_argument("--reserved-reply-tokens", type=int)
        sub.add_argument("--compaction-threshold", type=float)
        sub.add_argument("--compaction", action=argparse.BooleanOptionalAction)
        sub.add_argument(
            "--workspace-root", metavar="PATH", help="the agent's workspace, an absolute path"
        )
        _add_budget_arguments(sub, "for requests with categories")

    sub = command("get", _get, "show a conversation's settings and statistics")
    sub.add_argument("conversation")

    command("list", _list, "list the namespace's conversations")

    sub = command("delete", _delete, "delete a conversation and all its items")
    sub.add_argument("conversation")

    sub = command("items", _items, "list a conversation's items")
    sub.add_argument("conversation")
    sub.add_argument("--state", dest="states", action="append", default=[], choices=ITEM_STATES)

    # ---- the agent loop
    def loop_command(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        sub = command(name, handler, help_text)
        sub.add_argument("conversation")
        sub.add_argument("--json", action="store_true", help="print the result as JSON")
        return sub

    sub = loop_command("usage", _usage, "show the active context's usage against the limit")
    sub.add_argument(
        "--reported",
        type=int,
        metavar="N",
        help="the provider's input-token count of the last response",
    )

    loop_command("active", _active, "print the active context, as the agent sends it")

    sub = loop_command("compact", _compact, "compact the active context")
    summary = sub.add_mutually_exclusive_group()
    summary.add_argument("--summary", metavar="TEXT", help="the summary; omitted: extractive")
    summary.add_argument(
        "--summary-file", metavar="PATH", help='read the summary from a file ("-": stdin)'
    )

    sub = loop_command("truncate", _truncate, "remove items from the active context")
    sub.add_argument(
        "strategy", choices=TRUNCATE_STRATEGIES, help="what to keep after the first pair"
    )

    sub = loop_command("checkpoint", _checkpoint, "create a named checkpoint")
    sub.add_argument("name")

    loop_command("checkpoints", _checkpoints, "list a conversation's checkpoints")

    sub = loop_command("restore", _restore, "restore a conversation to a checkpoint")
    sub.add_argument("name")

    loop_command("edits", _edits, "list the context history: compactions, truncations, ...")

    sub = loop_command("watch", _watch, "print a conversation's events until Ctrl-C")
    sub.add_argument(
        "--after",
        type=int,
        default=0,
        metavar="N",
        help="replay the kept events after this event id first (default 0: all kept)",
    )

    # Its arguments come from contextwm.serve, added in main() only when it runs.
    serve = commands.add_parser("serve", help="run the contextwm server")
    return parser, serve


def _add_budget_arguments(sub: argparse.ArgumentParser, scope: str) -> None:
    sub.add_argument(
        "--budget",
        dest="budgets",
        action="append",
        default=[],
        type=_budget,
        metavar=_BUDGET_FORM,
        help=f"a category's shares 0..1 ({', '.join(CATEGORIES)}); an empty part is left "
        f"unchanged; {scope}",
    )
    sub.add_argument(
        "--weight",
        dest="weights",
        action="append",
        default=[],
        type=_weight,
        metavar="TYPE=W",
        help=f"a contributor weight 0..1 ({', '.join(CONTRIBUTOR_TYPES)}); {scope}",
    )


def _name_value(text: str, names: Sequence[str], what: str, form: str) -> tuple[str, str]:
    name, separator, value = text.partition("=")
    if not separator:
        raise argparse.ArgumentTypeError(f"expected {form}, got {text!r}")
    if name not in names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {name!r}; expected one of {', '.join(names)}"
        )
    return name, value


def _budget(text: str) -> CategoryBudget:
    category, value = _name_value(text, CATEGORIES, "category", _BUDGET_FORM)
    try:
        shares = [float(part) if part else None for part in value.split(":")]
    except ValueError:
        shares = []
    if not 1 <= len(shares) <= 3:
        raise argparse.ArgumentTypeError(f"expected {_BUDGET_FORM}, got {text!r}")
    return CategoryBudget(category, *shares)


def _weight(text: str) -> tuple[str, float]:
    contributor_type, value = _name_value(text, CONTRIBUTOR_TYPES, "contributor type", "TYPE=W")
    try:
        return contributor_type, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected TYPE=W, got {text!r}") from None


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
    categories: CategoryOptions | bool = args.categories
    if args.budgets or args.weights or args.files:
        categories = CategoryOptions(
            budgets=tuple(args.budgets),
            contributor_weights=dict(args.weights),
            files=tuple(args.files),
        )
    context = client.get_context(
        args.conversation, args.query, max_tokens=args.max_tokens, categories=categories
    )
    if args.json:
        print(_json(context))
        return 0
    print(context.text)
    if context.allocation is not None:  # on stderr: stdout stays the text for a prompt
        _print_allocation(context.allocation, sys.stderr)
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


def _settings(args: argparse.Namespace) -> ConversationSettings:
    return ConversationSettings(
        window_max_tokens=args.window_max_tokens,
        window_max_items=args.window_max_items,
        encoding=args.encoding,
        adaptive_window=args.adaptive_window,
        model=args.model,
        context_limit=args.context_limit,
        reserved_reply_tokens=args.reserved_reply_tokens,
        compaction_threshold=args.compaction_threshold,
        compaction_enabled=args.compaction,
        workspace_root=args.workspace_root,
        category_budgets=tuple(args.budgets) or None,
        contributor_weights=dict(args.weights) or None,
    )


def _create(client: Client, args: argparse.Namespace) -> int:
    _print_conversation(client.create_conversation(args.conversation, settings=_settings(args)))
    return 0


def _update(client: Client, args: argparse.Namespace) -> int:
    _print_conversation(client.update_conversation(args.conversation, _settings(args)))
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


def _usage(client: Client, args: argparse.Namespace) -> int:
    usage = client.get_usage(args.conversation, reported_input_tokens=args.reported)
    if args.json:
        print(_json(usage))
    else:
        _print_usage(usage)
    return 0


def _active(client: Client, args: argparse.Namespace) -> int:
    # Pages by hand rather than with iter_active_context: the totals and usage come along.
    entries: list[ActiveEntry] = []
    page_token = ""
    while True:
        page = client.get_active_context(args.conversation, page_size=500, page_token=page_token)
        entries.extend(page.entries)
        if not args.json:
            for entry in page.entries:
                print(_entry_line(entry))
        if not page.next_page_token:
            break
        page_token = page.next_page_token
    if args.json:
        print(_json(dataclasses.replace(page, entries=tuple(entries))))
    else:
        print(
            f"{page.total_entries} entries, {page.total_tokens} tokens; {_usage_line(page.usage)}"
        )
    return 0


def _compact(client: Client, args: argparse.Namespace) -> int:
    summary: str | None = args.summary
    if args.summary_file == "-":
        summary = sys.stdin.read()
    elif args.summary_file is not None:
        try:
            with open(args.summary_file, encoding="utf-8") as file:
                summary = file.read()
        except OSError as exc:  # a usage error: nothing was sent
            print(f"error: cannot read the summary file: {exc}", file=sys.stderr)
            return 2
    result = client.compact(args.conversation, summary)
    if args.json:
        print(_json(result))
    else:
        print(_compaction_text(result.compaction))
        print(f"usage: {_usage_line(result.usage)}")
    return 0


def _truncate(client: Client, args: argparse.Namespace) -> int:
    result = client.truncate(args.conversation, args.strategy)
    if args.json:
        print(_json(result))
    else:
        seqs = result.truncated_seqs
        if seqs:
            print(
                f"truncated {len(seqs)} items ({_seq_ranges(seqs)}), "
                f"{result.tokens_removed} tokens removed"
            )
        else:
            print("nothing to truncate")
        print(f"usage: {_usage_line(result.usage)}")
    return 0


def _checkpoint(client: Client, args: argparse.Namespace) -> int:
    checkpoint = client.create_checkpoint(args.conversation, args.name)
    print(_json(checkpoint) if args.json else f"created checkpoint {_checkpoint_text(checkpoint)}")
    return 0


def _checkpoints(client: Client, args: argparse.Namespace) -> int:
    checkpoints = client.list_checkpoints(args.conversation)
    if args.json:
        print(_json(checkpoints))
    elif not checkpoints:
        print("no checkpoints", file=sys.stderr)
    else:
        for checkpoint in checkpoints:
            print(
                f"{checkpoint.name}\t{checkpoint.created_at.isoformat()}\t"
                f"seq {checkpoint.last_seq}\t{checkpoint.active_tokens} tok\t"
                f"{checkpoint.compactions} compactions"
            )
    return 0


def _restore(client: Client, args: argparse.Namespace) -> int:
    result = client.restore_checkpoint(args.conversation, args.name)
    if args.json:
        print(_json(result))
    else:
        print(
            f"restored checkpoint {_checkpoint_text(result.checkpoint)}: "
            f"{result.reverted_items} items reverted, {result.undone_edits} edits undone"
        )
        print(f"usage: {_usage_line(result.usage)}")
    return 0


def _edits(client: Client, args: argparse.Namespace) -> int:
    edits = list(client.iter_context_edits(args.conversation))
    if args.json:
        print(_json(edits))
    elif not edits:
        print("no context edits", file=sys.stderr)
    else:
        for edit in edits:
            print(_edit_line(edit))
    return 0


def _watch(client: Client, args: argparse.Namespace) -> int:
    # Runs until Ctrl-C: main() turns the KeyboardInterrupt into exit status 130, and leaving
    # the with block cancels the stream. Flushed per line so that pipes see events at once.
    with client.watch(args.conversation, after_event_id=args.after) as events:
        for event in events:
            print(_json(event, indent=None) if args.json else _event_line(event), flush=True)
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
    kind = "" if item.kind == "message" else f"[{item.kind}] "
    return (
        f"{item.seq}\t{item.state}\t{item.role}\t{item.token_count} tok\t{flags}\t"
        f"{kind}{_preview(item.content)}"
    )


def _scored_line(hit: ScoredItem) -> str:
    return (
        f"{hit.item.conversation_id}#{hit.seq}\t{hit.score:.3f}\t{hit.role}\t"
        f"{hit.timestamp.isoformat()}\t{_preview(hit.content)}"
    )


def _print_conversation(conversation: Conversation) -> None:
    current = conversation.settings
    settings = dataclasses.asdict(current)
    # Budgets and weights in the syntax of --budget and --weight.
    if current.category_budgets is not None:
        settings["category_budgets"] = " ".join(_budget_text(b) for b in current.category_budgets)
    if current.contributor_weights is not None:
        weights = current.contributor_weights.items()
        settings["contributor_weights"] = " ".join(f"{t}={w:g}" for t, w in weights)
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


def _budget_text(budget: CategoryBudget) -> str:
    shares = (budget.share, budget.min_share, budget.max_share)
    return f"{budget.category}=" + ":".join("" if s is None else f"{s:g}" for s in shares)


def _print_allocation(report: AllocationReport, out: TextIO) -> None:
    print(f"allocation: {report.allocated} tokens", file=out)
    for c in report.categories:
        print(
            f"{c.category}\tmin {c.minimum}\tmax {c.maximum}\tgranted {c.granted}\t"
            f"used {c.used}\tlent {c.lent}\tborrowed {c.borrowed}",
            file=out,
        )
    for piece in report.contributors:
        status = "chosen" if piece.chosen else "left out"
        print(
            f"{status}\t{piece.type}\t{piece.source}\tscore {piece.score:.3f}\t"
            f"{piece.tokens} tok\t{piece.reason or piece.detail or '-'}",
            file=out,
        )


def _seq_ranges(seqs: Sequence[int]) -> str:
    """Writes seqs compactly: (3, 4, 5, 9) -> "3-5, 9"."""
    ranges: list[str] = []
    ordered = sorted(seqs)
    start = 0
    for i, seq in enumerate(ordered):
        if i + 1 == len(ordered) or ordered[i + 1] != seq + 1:
            first = ordered[start]
            ranges.append(str(first) if first == seq else f"{first}-{seq}")
            start = i + 1
    return ", ".join(ranges)


def _usage_line(usage: Usage) -> str:
    if not usage.context_limit:
        return f"{usage.used_tokens} tokens ({usage.source}), no context limit"
    compact = ", compact now" if usage.should_compact else ""
    return (
        f"{usage.used_tokens}/{usage.usable_tokens} tokens ({usage.fill_ratio:.1%}, "
        f"{usage.source}), threshold {usage.threshold:.0%}{compact}"
    )


def _print_usage(usage: Usage) -> None:
    o = usage.optimisations
    if usage.context_limit:
        limit = (
            f"{usage.context_limit} ({usage.reserved_reply_tokens} reserved for the reply, "
            f"{usage.usable_tokens} usable)"
        )
        fill = f"{usage.fill_ratio:.1%} of usable (threshold {usage.threshold:.0%})"
    else:
        limit, fill = "none (no automatic management)", "-"
    lines = {
        "model": usage.model or "-",
        "used": f"{usage.used_tokens} tokens ({usage.source}; active {usage.active_tokens}, "
        f"reported {usage.reported_tokens})",
        "limit": limit,
        "fill": fill,
        "compaction": "enabled" if usage.compaction_enabled else "disabled",
        "should compact": "yes" if usage.should_compact else "no",
        "compactions": str(usage.compactions),
        "active items": str(usage.active_items),
        "masked": f"{o.masked_items} tool outputs ({o.masked_tokens_saved} tokens saved)",
        "duplicate reads": f"{o.duplicate_reads} ({o.duplicate_tokens_saved} tokens saved)",
        "truncated": f"{o.truncated_items} items ({o.truncated_tokens} tokens)",
    }
    width = max(len(name) for name in lines)
    for name, value in lines.items():
        print(f"{name:<{width}}  {value}")
    if usage.summary_request:
        print()
        print("summary request (send it to the LLM, then `contextwm compact --summary-file`):")
        print(usage.summary_request)


def _entry_line(entry: ActiveEntry) -> str:
    tokens = f"{entry.token_count} tok"
    if entry.original_tokens != entry.token_count:
        tokens += f" (of {entry.original_tokens})"
    kind = "" if entry.kind == "message" else f"[{entry.kind}] "
    return (
        f"{entry.seq or '-'}\t{entry.role}\t{entry.treatment}\t{tokens}\t"
        f"{kind}{_preview(entry.content)}"
    )


def _compaction_text(compaction: Compaction) -> str:
    how = "extractive summary" if compaction.extractive else "summary given"
    undone = " (undone)" if compaction.undone else ""
    return (
        f"compaction {compaction.number} ({how}){undone}: marker seq {compaction.marker_seq}, "
        f"{compaction.items_archived} items left the active context, "
        f"{compaction.tokens_before} -> {compaction.tokens_after} tokens"
    )


def _checkpoint_text(checkpoint: Checkpoint) -> str:
    return (
        f"{checkpoint.name} at seq {checkpoint.last_seq} ({checkpoint.active_tokens} active "
        f"tokens, {checkpoint.compactions} compactions)"
    )


def _edit_text(edit: ContextEdit) -> str:
    related = f" -> {edit.related_seq}" if edit.related_seq else ""
    undone = f" (undone {edit.undone_at.isoformat()})" if edit.undone_at else ""
    detail = f"; {edit.detail}" if edit.detail else ""
    return (
        f"{edit.kind} {_seq_ranges(edit.seqs) or '-'}{related}, "
        f"{edit.tokens_saved} tokens saved{undone}{detail}"
    )


def _edit_line(edit: ContextEdit) -> str:
    return f"{edit.id}\t{edit.created_at.isoformat()}\t{_edit_text(edit)}"


def _event_line(event: Event) -> str:
    # By the part that is set rather than by kind, so that a kind this CLI does not know yet
    # still prints what it carries.
    if event.usage is not None:
        detail = _usage_line(event.usage)
    elif event.compaction is not None:
        detail = _compaction_text(event.compaction)
    elif event.edit is not None:
        detail = _edit_text(event.edit)
    elif event.checkpoint is not None:
        detail = _checkpoint_text(event.checkpoint)
        if event.kind == "checkpoint_restored":
            detail += f": {event.reverted_items} items reverted"
    elif event.eviction_seqs:
        detail = f"archived {_seq_ranges(event.eviction_seqs)}"
    elif event.kind == "gap":
        detail = f"{event.missed} events missed (dropped by retention)"
    else:
        detail = "-"
    return f"{event.id}\t{event.created_at.isoformat()}\t{event.kind}\t{detail}"


def _json(value: Any, *, indent: int | None = 2) -> str:
    """Renders a result dataclass, or a list of them, as JSON (datetimes as ISO 8601).

    Args:
        value: The dataclass or list.
        indent: Indentation; None writes one line (JSON lines, for streams).
    """

    def default(obj: object) -> str:
        if isinstance(obj, datetime):
            return obj.isoformat()
        raise TypeError(f"not JSON serialisable: {type(obj).__name__}")

    data = (
        [dataclasses.asdict(v) for v in value]
        if isinstance(value, list)
        else dataclasses.asdict(value)
    )
    return json.dumps(data, indent=indent, ensure_ascii=False, default=default)


if __name__ == "__main__":
    sys.exit(main())
