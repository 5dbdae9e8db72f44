"""`contextwm import`: streams timelines into a running server, in calls of many chunks,
reporting progress, bad lines and resume points by what the server has answered."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from contextwm_client import (
    Client,
    ImportFailure,
    ImportItem,
    ImportResult,
    NotFoundError,
    UnavailableError,
)

from contextwm.cli import transfer
from contextwm.cli.importing.chat_exports import ChatReader
from contextwm.cli.importing.progress import Progress, Tally
from contextwm.cli.importing.resume import Point, ResumePoints, Witness
from contextwm.cli.importing.sources import (
    CHAT_FORMATS,
    BadLine,
    Input,
    Reader,
    Record,
    parse_mapping,
)

# Bad lines printed one by one; the rest are counted in the summary.
MAX_NOTED = 100
# Chunks handed to gRPC ahead of the server's answers: two keep the server's embedder busy
# (it embeds one chunk while it stores the one before), and bound what a Ctrl-C waits for.
CHUNKS_AHEAD = 2
# Creation times read back through the API and saved in JSON compare within this (seconds).
SAME_TIME = 1e-3


class _Stop(Exception):
    """--strict met a bad line."""


class _Interrupted(Exception):
    """Ctrl-C: the server has answered everything it was sent."""


@dataclass(frozen=True, slots=True)
class _Line:
    """A line handed over: where it ends, the stream position of its first item, its items'
    conversations, for a skipped line (no items) why, and for a chat the messages on its
    other branches (not sent)."""

    point: Point
    first: int
    conversations: tuple[tuple[str, str], ...] = ()
    skipped: str | None = None
    other_branches: int = 0


class _Call:
    """The lines of one Import call the server has not answered yet.

    The reading thread (gRPC's) adds lines and waits while more than `ahead` items are
    unanswered; the caller's thread takes lines off, in file order, as answers arrive.
    """

    def __init__(self, ahead: int) -> None:
        self.ahead = ahead
        self.lines: deque[_Line] = deque()
        self.handed = 0  # items handed to gRPC
        self.answered = ImportResult(0, 0, 0, 0, 0, ())
        # Refused items not reported yet (their line is not complete), by stream position.
        self.failures: dict[int, ImportFailure] = {}
        self.ended = False
        self.changed = threading.Condition()

    @property
    def done(self) -> int:
        """Items answered: each is appended, a duplicate or failed."""
        r = self.answered
        return r.appended + r.duplicates + r.failed

    def hand(
        self,
        point: Point,
        conversations: tuple[tuple[str, str], ...] = (),
        skipped: str | None = None,
        other_branches: int = 0,
    ) -> bool:
        """Records a line about to be handed over, once few enough items are unanswered
        (more than a chunk and less than two are, between lines: the server answers a
        chunk once it has the next one). False once the call is over."""
        with self.changed:
            self.changed.wait_for(lambda: self.handed - self.done < self.ahead or self.ended)
            if self.ended:
                return False
            self.lines.append(_Line(point, self.handed, conversations, skipped, other_branches))
            self.handed += len(conversations)
            return True

    def answer(self, result: ImportResult) -> list[_Line]:
        """The lines whose items the answers so far cover, in file order (a skipped line
        comes off once the lines before it have)."""
        out: list[_Line] = []
        with self.changed:
            self.answered = result
            while (
                self.lines and self.lines[0].first + len(self.lines[0].conversations) <= self.done
            ):
                out.append(self.lines.popleft())
            self.changed.notify_all()
        return out

    def end(self) -> None:
        """The call is over (answered or failed): a waiting reader stops."""
        with self.changed:
            self.ended = True
            self.changed.notify_all()


class ImportRun:
    """One `contextwm import`: its inputs in order, each resumable on its own."""

    def __init__(
        self,
        client: Client,
        args: argparse.Namespace,
        stderr: TextIO,
        stop: threading.Event | None = None,
    ) -> None:
        """Args:
        stop: Set to end the import cleanly (the entry point's Ctrl-C): nothing more is
            sent, and what was sent is answered before the summary.
        """
        self.client = client
        self.args = args
        mapping = parse_mapping(args.map)
        self.reader: Reader | ChatReader
        if args.format in CHAT_FORMATS:
            if mapping or args.conversation_field:
                raise ValueError(
                    f"--map and --conversation-field do not apply to --format {args.format}:"
                    " an export's fields are known"
                )
            self.reader = ChatReader(args.format)
        else:
            self.reader = Reader(args.format, mapping, args.conversation_field)
        # What decides what the server stores of an input besides its lines: a resume point
        # holds for these only.
        self.sending: dict[str, Any] = {
            "namespace": args.namespace or "",  # "": the default namespace
            "format": args.format,
            "map": sorted(mapping.items()),
            "conversation_field": args.conversation_field,
        }
        self.tally = Tally()
        # Of the current input, over every run: bad lines and items, and the conversation
        # that tells whether the server still holds what was sent (see resume.py).
        self.bad = 0
        self.witness: Witness | None = None
        self._candidate: tuple[str, str] | None = None
        # Bad lines and items of inputs (or their parts) that earlier runs sent.
        self.earlier_bad = 0
        self.noted = 0
        self.stopped = False  # --strict met a bad line
        self.stop = stop or threading.Event()
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
        except _Interrupted:
            self.progress.note(
                "interrupted: the server holds what the summary counts; run the same"
                " command again to finish"
            )
            self.progress.note(self.progress.summary(self.tally, finished=False))
            return 130
        except KeyboardInterrupt:  # a second Ctrl-C: the last chunks were not answered
            self.progress.note(
                "interrupted: the server holds what the summary counts and perhaps a few"
                " chunks more; run the same command again to finish"
            )
            self.progress.note(self.progress.summary(self.tally, finished=False))
            return 130
        self.progress.note(self.progress.summary(self.tally, finished=finished))
        bad = self.tally.skipped or self.tally.failed or self.earlier_bad
        return 0 if finished and not bad else 1

    def _input(self, source: Input) -> None:
        points = None
        if source.path != "-":
            points = ResumePoints(
                self.args.state_dir, _identity(source), self.args.target, self.sending
            )
            if self.args.restart:
                points.clear()
        point = (points.load() if points else None) or Point()
        if points is not None and (point.line or point.done) and not self._holds(source, point):
            points.clear()
            point = Point()
        self.bad, self.witness, self._candidate = point.bad, point.witness, None
        self.earlier_bad += point.bad
        earlier = f"; {point.bad:,} bad lines or items then" if point.bad else ""
        if point.done:
            self.progress.note(
                f"{source.name}: imported already (resume point at its end{earlier});"
                " --restart sends it again"
            )
            return
        if point.line:
            self.progress.note(
                f"{source.name}: resuming after line {point.line:,}"
                + (f" ({point.bad:,} bad lines or items before it)" if point.bad else "")
            )
        self.progress.begin_input(source.size(), point.end)
        retry_until: float | None = None
        while True:
            try:
                self._send(source, point, points)
                return
            except UnavailableError as e:
                # A restarting server: wait for it, then go on from the last resume point. One
                # that never answered was waited for already (the client's --wait).
                now = self.progress.clock()
                retry_until = retry_until or now + self.args.retry_seconds
                answered = self.tally.held + self.tally.failed > 0
                if not answered or now >= retry_until or source.path == "-":
                    raise
                self.progress.note(f"server unavailable ({e.details}); waiting for it")
                self.client.wait_ready(timeout=retry_until - now)
                point = (points.load() if points else None) or Point()

    def _holds(self, source: Input, point: Point) -> bool:
        """Whether the server still holds what the point says was sent: the conversation
        its witness names, made at the time it names. A point with no witness stored
        nothing, so there is nothing to lose."""
        witness = point.witness
        if witness is None:
            return True
        try:
            found = self.client.get_conversation(
                witness.conversation_id, namespace=witness.namespace or None
            )
        except NotFoundError:
            found = None
        if found is not None and abs(found.created_at.timestamp() - witness.created_at) < SAME_TIME:
            return True
        where = f"{witness.conversation_id!r}" + (
            f" of namespace {witness.namespace!r}" if witness.namespace else ""
        )
        self.progress.note(
            f"{source.name}: the server no longer holds what its resume point says"
            f" (conversation {where} is gone, or was made again since); sending it whole"
        )
        return False

    def _witness(self) -> None:
        """Names the first conversation this input stored, with its creation time, once
        there is one (a call, once per input)."""
        if self.witness is not None or self._candidate is None:
            return
        namespace, conversation = self._candidate
        try:
            found = self.client.get_conversation(conversation, namespace=namespace or None)
        except NotFoundError:  # deleted meanwhile: the next stored line names another
            self._candidate = None
            return
        self.witness = Witness(namespace, conversation, found.created_at.timestamp())

    def _send(self, source: Input, start: Point, points: ResumePoints | None) -> None:
        """Sends the input from start in calls of about segment_items items each."""
        records = self.reader.records(source, start.line, start.end)
        point = start
        while not point.done:
            point, result = self._call(source, records, point, points)
            if self.unreadable is not None:
                raise self.unreadable
            if self.stopped or (self.args.strict and result.failed):
                raise _Stop
            if self.stop.is_set() and not point.done:
                raise _Interrupted

    def _call(
        self,
        source: Input,
        records: Iterator[Record],
        point: Point,
        points: ResumePoints | None,
    ) -> tuple[Point, ImportResult]:
        """One Import call of up to segment_items items; the resume point follows the
        server's answers. Returns the point after the last line answered, and the call's
        result."""
        call = _Call(CHUNKS_AHEAD * self.args.chunk_size)
        reported = call.answered

        def answered(result: ImportResult) -> None:
            nonlocal point, reported
            new = result.failures[len(reported.failures) :]
            call.failures.update((f.index, f) for f in new)
            point = self._account(call, call.answer(result), result, reported) or point
            reported = result
            if points is not None:
                self._witness()
                points.save(dataclasses.replace(point, bad=self.bad, witness=self.witness))
            self.progress.update(self.tally, point.end or None)

        try:
            self.client.import_items(
                self._segment(source, records, call, point),
                chunk_size=self.args.chunk_size,
                on_progress=answered,
            )
        finally:
            call.end()
        # Lines after the last item (skipped ones, the input's end) are complete now.
        answered(call.answered)
        self.progress.update(self.tally, point.end or None, force=True)
        return point, reported

    def _segment(
        self, source: Input, records: Iterator[Record], call: _Call, start: Point
    ) -> Iterator[ImportItem]:
        """Items of whole lines, up to segment_items or the input's end (then a last line
        marks the end). Runs in gRPC's sending thread: what goes wrong here is kept for the
        caller, since an exception would only fail the call with "Exception iterating"."""
        sent = 0
        last = start
        try:
            for record in records:
                if self.stop.is_set():
                    return
                last = Point(record.line, record.end)
                if record.error is not None:
                    reason = f"{source.name}:{record.line}: skipped: {record.error}"
                    if not call.hand(last, skipped=reason):
                        return
                    if self.args.strict:
                        self.stopped = True
                        return
                    continue
                where = tuple((i.namespace or "", i.conversation_id) for i in record.items)
                if not call.hand(last, where, other_branches=record.other_branches):
                    return
                yield from record.items
                sent += len(record.items)
                if sent >= self.args.segment_items:
                    return
        except (OSError, BadLine) as e:
            self.unreadable = e
            return
        call.hand(Point(last.line, last.end, done=True))

    def _account(
        self, call: _Call, lines: list[_Line], result: ImportResult, before: ImportResult
    ) -> Point | None:
        """Counts what the server answered since `before`, and reports the answered lines'
        bad lines and refused items in file order; returns the point after those lines."""
        tally = self.tally
        tally.appended += result.appended - before.appended
        tally.duplicates += result.duplicates - before.duplicates
        tally.failed += result.failed - before.failed
        tally.out_of_order += result.out_of_order - before.out_of_order
        point = None
        for line in lines:
            tally.other_branches += line.other_branches
            if line.skipped is not None:
                tally.skipped += 1
                self.bad += 1
                self._note(line.skipped)
            for n, conversation in enumerate(line.conversations, start=line.first):
                failure = call.failures.pop(n, None)
                if failure is None:
                    tally.conversations.add(conversation)
                    self._candidate = self._candidate or conversation
                else:
                    self.bad += 1
                    self._note(f"{failure.source}: failed: {failure.code}: {failure.message}")
            point = line.point
        return point

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
        if args.format == "export" or (
            args.format == "auto" and all(transfer.is_export(p) for p in args.inputs)
        ):
            return transfer.restore(client, args.inputs, args.namespace)
        return ImportRun(client, args, sys.stderr, args.stop).run()
    except (OSError, BadLine) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def default_state_dir() -> Path:
    """Where resume points live unless --state-dir says otherwise."""
    return Path.home() / ".local" / "state" / "contextwm" / "imports"
