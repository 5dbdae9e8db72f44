"""The reembed command: brings stale conversations to the server's embedding model, with a
progress line on stderr and a summary on stdout."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from typing import TextIO

from contextwm_client import Client, ReembedProgress

from contextwm.cli import render

RESUME = "run the command again to resume: what was embedded is kept"


def reembed(client: Client, args: argparse.Namespace) -> int:
    if args.all and args.conversation:
        print("error: name a conversation or --all, not both", file=sys.stderr)
        return 2
    line = _ProgressLine(sys.stderr)
    last: ReembedProgress | None = None
    started = time.monotonic()
    # closing(): a Ctrl-C between two reports closes the stream too, cancelling the call.
    reports = client.reembed(args.conversation, all_namespaces=args.all)
    try:
        with contextlib.closing(reports):
            for last in reports:
                if args.json:
                    print(render.to_json(last, indent=None), flush=True)
                else:
                    line.show(progress_line(last))
    except KeyboardInterrupt:
        line.end()
        done = f" after {last.items_done} of {last.items_total} items" if last else ""
        print(f"interrupted{done}; {RESUME}", file=sys.stderr)
        return 130
    finally:
        line.end()
    if last is None or not last.finished:
        print(f"error: the re-embed stopped before it finished; {RESUME}", file=sys.stderr)
        return 1
    if not args.json:
        print(summary(last, time.monotonic() - started, _scope(args)))
    return 0


def _scope(args: argparse.Namespace) -> str:
    namespace = f"namespace {args.namespace}" if args.namespace else "the default namespace"
    if args.all:
        return "every namespace"
    if args.conversation:
        return f"conversation {args.conversation} of {namespace}"
    return namespace


def progress_line(p: ReembedProgress) -> str:
    now = f", {p.namespace}/{p.conversation_id}" if p.conversation_id else ""
    return (
        f"re-embedding with {p.model}: {p.conversations_done}/{p.conversations_total}"
        f" conversations, {p.items_done}/{p.items_total} items"
        f" ({p.items_per_second:.1f} items/s){now}"
    )


def summary(p: ReembedProgress, seconds: float, scope: str) -> str:
    if p.conversations_total == 0:
        return f"nothing to re-embed: every conversation of {scope} uses {p.model}"
    reused = (
        f"; {_count(p.items_reused, 'item')} embedded by an earlier run kept"
        if p.items_reused
        else ""
    )
    return (
        f"re-embedded {_count(p.conversations_done, 'conversation')}"
        f" ({_count(p.items_done, 'item')}) with {p.model} in {seconds:.1f} s"
        f" ({p.items_per_second:.1f} items/s){reused}"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


class _ProgressLine:
    """One line rewritten in place on a terminal; elsewhere (a log, a pipe) a line per report."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._tty = out.isatty()
        self._open = False

    def show(self, text: str) -> None:
        if self._tty:
            self._out.write(f"\r{text}\x1b[K")  # \x1b[K: clear what a longer line left
            self._open = True
        else:
            self._out.write(text + "\n")
        self._out.flush()

    def end(self) -> None:
        """Ends a line left open, so that what follows starts on its own line."""
        if self._open:
            self._out.write("\n")
            self._out.flush()
            self._open = False
