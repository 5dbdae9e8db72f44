"""`contextwm export` and the restore half of `contextwm import`: conversations as the JSON
Lines of an export, written to a file or standard output, and read back exactly."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from contextwm_client import Client

from contextwm.cli import render
from contextwm.cli.importing.sources import Input


def export(client: Client, args: argparse.Namespace) -> int:
    """Writes the export to --output (whole or not at all: it is written beside and renamed
    once complete) or to standard output."""
    lines = client.export(args.conversation, namespace=args.namespace)
    if args.output in (None, "-"):
        for line in lines:
            sys.stdout.write(line + "\n")
        return 0
    target = Path(args.output)
    partial = target.with_name(target.name + ".partial")
    count = 0
    try:
        with partial.open("w", encoding="utf-8", newline="\n") as out:
            for line in lines:
                out.write(line + "\n")
                count += 1
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(target)
    print(f"exported {count} lines to {target}", file=sys.stderr)
    return 0


def is_export(path: str) -> bool:
    """Whether a file (not standard input, which cannot be looked at twice) starts as an
    export does: with a conversation line that names the format."""
    if path == "-":
        return False
    data, raw = Input(path).open()
    with raw, data:
        for line in data:
            if line.strip():
                try:
                    record = json.loads(line)
                except ValueError:
                    return False
                return (
                    isinstance(record, dict)
                    and record.get("type") == "conversation"
                    and "format" in record
                )
    return False


def restore(client: Client, inputs: Sequence[str], namespace: str | None) -> int:
    """Restores the conversations of export files, in order, in one call."""

    def lines() -> Iterator[str]:
        for path in inputs:
            data, raw = Input(path).open()
            with contextlib.ExitStack() as stack:
                stack.enter_context(raw)
                stack.enter_context(data)
                for line in data:
                    yield line.decode("utf-8")

    result = client.restore_export(lines(), namespace=namespace)
    print(
        f"restored {render.counted(result.restored, 'conversation')}"
        f" ({render.counted(result.items, 'item')});"
        f" {result.unchanged} were there already, unchanged."
        + (" The server embeds the restored items now." if result.restored else "")
    )
    return 0
