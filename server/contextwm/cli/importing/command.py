"""`contextwm import`: streams timelines into a running server, in calls of many chunks,
saving a resume point after each call, reporting bad lines and progress as it goes."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from contextwm_client import Client, ImportItem, ImportResult, UnavailableError

from contextwm.cli.importing.progress import Progress, Tally
from contextwm.cli.importing.resume import Point, ResumePoints
from contextwm.cli.importing.sources import BadLine, Input, Reader, Record, parse_mapping

# Bad lines printed one by one; the rest are counted in the summary.
MAX_NOTED = 100


class _Stop(Exception):
    """--strict met a bad line."""


@dataclass(slots=True)
class _Cursor:
    """Where the reading stands: the last line whose items were all handed over."""

    point: Point
    position: int | None = None  # raw bytes read, for the progress


class ImportRun:
    """One `contextwm import`: its inputs in order, each resumable on its own."""

    def __init__(self, client: Client, args: argparse.Namespace, stderr: TextIO) -> None:
        self.client = client
        self.args = args
        self.reader = Reader(args.format, parse_mapping(args.map), args.conversation_field)
        self.tally = Tally()
        self.noted = 0
        self.stopped = False  # --strict met a bad line
        self.unreadable: OSError | BadLine | None = None
        self.progress = Progress(stderr, total_bytes=None, terminal=stderr.isatty())

    def run(self) -> int:
        """Imports every input; returns the exit status (0: all stored, 1: something was
        skipped or failed, 130: interrupted)."""
        finished = False
        try:
            for path in self.args.inputs:
                self._input(Input(path))
            finished = True
        except _Stop:
            pass
        except KeyboardInterrupt:
            self.progress.note(
                "interrupted: what was sent before the last resume point is stored;"
                " run the same command again to finish"
            )
            self.progress.note(self.progress.summary(self.tally, finished=False))
            return 130
        self.progress.note(self.progress.summary(self.tally, finished=finished))
        return 0 if finished and not (self.tally.skipped or self.tally.failed) else 1

    def _input(self, source: Input) -> None:
        points = None
        if source.path != "-":
            points = ResumePoints(self.args.state_dir, _identity(source), self.args.target)
            if self.args.restart:
                points.clear()
        point = (points.load() if points else None) or Point()
        if point.done:
            self.progress.note(
                f"{source.name}: imported already (resume point at its end); --restart sends"
                " it again"
            )
            return
        if point.line:
            self.progress.note(f"{source.name}: resuming after line {point.line:,}")
        self.progress.total_bytes = source.size()
        retry_until: float | None = None
        while True:
            try:
                self._send(source, point, points)
                return
            except UnavailableError as e:
                # A restarting server: wait for it, then go on from the last resume point.
                now = self.progress.clock()
                retry_until = retry_until or now + self.args.retry_seconds
                if now >= retry_until or source.path == "-":
                    raise
                self.progress.note(f"server unavailable ({e.details}); waiting for it")
                self.client.wait_ready(timeout=retry_until - now)
                point = (points.load() if points else None) or Point()

    def _send(self, source: Input, start: Point, points: ResumePoints | None) -> None:
        """Sends the input from start in calls of about segment_items items each."""
        records = self.reader.records(source, start.line, start.end)
        cursor = _Cursor(start)
        more = True
        while more:
            segment = self._segment(source, records, cursor)
            result = self.client.import_items(segment, chunk_size=self.args.chunk_size)
            more = not (cursor.point.done or self.stopped or self.unreadable)
            self._account(result)
            if points is not None:
                points.save(cursor.point)
            if self.unreadable is not None:
                raise self.unreadable
            if self.stopped or (self.args.strict and result.failed):
                raise _Stop

    def _segment(
        self, source: Input, records: Iterator[Record], cursor: _Cursor
    ) -> Iterator[ImportItem]:
        """Items of whole lines, up to segment_items or the input's end (then the cursor's
        point is done). Runs in gRPC's sending thread: what goes wrong here is kept for the
        caller, since an exception would only fail the call with "Exception iterating"."""
        sent = 0
        try:
            for record in records:
                if record.error is not None:
                    self.tally.skipped += 1
                    self._note(f"{source.name}:{record.line}: skipped: {record.error}")
                    if self.args.strict:
                        self.stopped = True
                        return
                for item in record.items:
                    self.tally.sent += 1
                    self.tally.conversations.add((item.namespace or "", item.conversation_id))
                    yield item
                sent += len(record.items)
                cursor.point = Point(record.line, record.end)
                self.progress.update(self.tally, record.end or None)
                if sent >= self.args.segment_items:
                    return
        except (OSError, BadLine) as e:
            self.unreadable = e
            return
        cursor.point = Point(cursor.point.line, cursor.point.end, done=True)

    def _account(self, result: ImportResult) -> None:
        self.tally.appended += result.appended
        self.tally.duplicates += result.duplicates
        self.tally.failed += result.failed
        for failure in result.failures:
            self._note(f"{failure.source}: failed: {failure.code}: {failure.message}")
        self.progress.update(self.tally, None, force=True)

    def _note(self, line: str) -> None:
        self.noted += 1
        if self.noted <= MAX_NOTED:
            self.progress.note(line)
        elif self.noted == MAX_NOTED + 1:
            self.progress.note(f"(more bad lines are only counted, after {MAX_NOTED})")


def _identity(source: Input) -> dict[str, object]:
    identity = source.identity()
    assert identity is not None  # only files have resume points
    return identity


def run_import(client: Client, args: argparse.Namespace) -> int:
    """The command's handler.

    Raises:
        ValueError: A bad --map (a usage error).
    """
    try:
        return ImportRun(client, args, sys.stderr).run()
    except (OSError, BadLine) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def default_state_dir() -> Path:
    """Where resume points live unless --state-dir says otherwise."""
    return Path.home() / ".local" / "state" / "contextwm" / "imports"
