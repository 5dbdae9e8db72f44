"""The agent-loop commands: usage, active, compact, truncate, checkpoints, edits and watch."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from contextwm_client import ActiveEntry, Client

from contextwm.cli import render


def usage(client: Client, args: argparse.Namespace) -> int:
    result = client.get_usage(args.conversation, reported_input_tokens=args.reported)
    if args.json:
        print(render.to_json(result))
    else:
        render.print_usage(result)
    return 0


def active(client: Client, args: argparse.Namespace) -> int:
    # Pages by hand rather than with iter_active_context: the totals and usage come along.
    entries: list[ActiveEntry] = []
    page_token = ""
    while True:
        page = client.get_active_context(args.conversation, page_size=500, page_token=page_token)
        entries.extend(page.entries)
        if not args.json:
            for entry in page.entries:
                print(render.entry_line(entry))
        if not page.next_page_token:
            break
        page_token = page.next_page_token
    if args.json:
        print(render.to_json(dataclasses.replace(page, entries=tuple(entries))))
    else:
        print(
            f"{page.total_entries} entries, {page.total_tokens} tokens; "
            f"{render.usage_line(page.usage)}"
        )
    return 0


def compact(client: Client, args: argparse.Namespace) -> int:
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
        print(render.to_json(result))
    else:
        print(render.compaction_text(result.compaction))
        print(f"usage: {render.usage_line(result.usage)}")
    return 0


def truncate(client: Client, args: argparse.Namespace) -> int:
    result = client.truncate(args.conversation, args.strategy)
    if args.json:
        print(render.to_json(result))
    else:
        seqs = result.truncated_seqs
        if seqs:
            print(
                f"truncated {render.counted(len(seqs), 'item')} ({render.seq_ranges(seqs)}), "
                f"{result.tokens_removed} tokens removed"
            )
        else:
            print("nothing to truncate")
        print(f"usage: {render.usage_line(result.usage)}")
    return 0


def checkpoint(client: Client, args: argparse.Namespace) -> int:
    created = client.create_checkpoint(args.conversation, args.name)
    if args.json:
        print(render.to_json(created))
    else:
        print(f"created checkpoint {render.checkpoint_text(created)}")
    return 0


def checkpoints(client: Client, args: argparse.Namespace) -> int:
    kept = client.list_checkpoints(args.conversation)
    if args.json:
        print(render.to_json(kept))
    elif not kept:
        print("no checkpoints", file=sys.stderr)
    else:
        for one in kept:
            print(render.checkpoint_line(one))
    return 0


def restore(client: Client, args: argparse.Namespace) -> int:
    result = client.restore_checkpoint(args.conversation, args.name)
    if args.json:
        print(render.to_json(result))
    else:
        print(
            f"restored checkpoint {render.checkpoint_text(result.checkpoint)}: "
            f"{render.counted(result.reverted_items, 'item')} reverted,"
            f" {render.counted(result.undone_edits, 'edit')} undone"
        )
        print(f"usage: {render.usage_line(result.usage)}")
    return 0


def edits(client: Client, args: argparse.Namespace) -> int:
    history = list(client.iter_context_edits(args.conversation))
    if args.json:
        print(render.to_json(history))
    elif not history:
        print("no context edits", file=sys.stderr)
    else:
        for edit in history:
            print(render.edit_line(edit))
    return 0


def watch(client: Client, args: argparse.Namespace) -> int:
    # Runs until Ctrl-C: the entry point turns the KeyboardInterrupt into exit status 130, and
    # leaving the with block cancels the stream. Flushed per line so that pipes see events at once.
    with client.watch(args.conversation, after_event_id=args.after) as events:
        for event in events:
            line = render.to_json(event, indent=None) if args.json else render.event_line(event)
            print(line, flush=True)
    return 0
