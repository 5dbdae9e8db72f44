"""Import progress as people expect it: a bar redrawn in place on a terminal, a plain line
every few seconds otherwise, and a summary at the end."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from contextwm.cli.render import counted

# A terminal's bar is redrawn this often; a log gets a line this often.
REDRAW_SECONDS = 0.2
LINE_SECONDS = 5.0
_BAR_WIDTH = 24


@dataclass(slots=True)
class Tally:
    """What the server has answered of an import so far (items handed to gRPC but not
    answered yet are not counted: the server may not hold them)."""

    appended: int = 0
    duplicates: int = 0
    skipped: int = 0  # lines that could not be read
    failed: int = 0  # items the server refused
    out_of_order: int = 0  # stored with a timestamp before an earlier item's
    other_branches: int = 0  # messages of chats on branches other than the one shown
    conversations: set[tuple[str, str]] = field(default_factory=set)  # holding its items

    @property
    def held(self) -> int:
        """Items the server holds from this import: new ones and those there already."""
        return self.appended + self.duplicates


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    """Reports a Tally to a stream; call `update` as often as you like."""

    def __init__(
        self,
        stream: TextIO,
        *,
        total_bytes: int | None,
        terminal: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Args:
        stream: Where reports go (standard error).
        total_bytes: The input's size, for the fraction done and the ETA (None: unknown).
        terminal: Draw a bar in place (a terminal) rather than print lines (a log).
        """
        self.stream = stream
        self.total_bytes = total_bytes
        self.terminal = terminal
        self.clock = clock
        self.started = clock()
        self._last = self.started
        self._drawn = False
        # Where this run started on the current input, and when: the ETA goes by what this
        # run read, not by what an earlier run (resumed from) did.
        self._base = 0
        self._input_started = self.started

    def begin_input(self, total_bytes: int | None, position: int = 0) -> None:
        """A new input (or a resumed one): its size, and the position this run starts at."""
        self.total_bytes = total_bytes
        self._base = position
        self._input_started = self.clock()

    def update(self, tally: Tally, position: int | None, *, force: bool = False) -> None:
        """Reports if it is time to (or forced).

        Args:
            position: Bytes of the input answered so far (compressed ones for .gz).
        """
        now = self.clock()
        if not force and now - self._last < (REDRAW_SECONDS if self.terminal else LINE_SECONDS):
            return
        self._last = now
        elapsed = max(now - self.started, 1e-9)
        rate = tally.held / elapsed
        done = None
        eta = None
        if self.total_bytes and position is not None:
            done = min(1.0, position / self.total_bytes)
            moved = position - self._base
            if moved > 0:
                left = max(0, self.total_bytes - position)
                eta = (now - self._input_started) * left / moved
        parts = [counted(tally.held, "item", grouped=True), f"{rate:,.0f} items/s"]
        if eta is not None:
            parts.append(f"ETA {_duration(eta)}")
        parts.append(counted(len(tally.conversations), "conversation", grouped=True))
        if tally.skipped or tally.failed:
            parts.append(f"{tally.skipped + tally.failed:,} bad")
        text = ", ".join(parts)
        if self.terminal:
            bar = ""
            if done is not None:
                filled = int(done * _BAR_WIDTH)
                bar = f"[{'#' * filled}{'-' * (_BAR_WIDTH - filled)}] {done:4.0%} "
            self.stream.write(f"\r\x1b[2Kimporting {bar}{text}")
            self._drawn = True
        else:
            fraction = f" ({done:.0%})" if done is not None else ""
            self.stream.write(f"import: {text}{fraction}\n")
        self.stream.flush()

    def note(self, line: str) -> None:
        """A line of its own (a bad line, say), above the bar."""
        if self._drawn:
            self.stream.write("\r\x1b[2K")
            self._drawn = False
        self.stream.write(line + "\n")
        self.stream.flush()

    def summary(self, tally: Tally, *, finished: bool) -> str:
        """The closing line: new items, those already there, conversations, seconds,
        items/s, skipped, failed. It counts new items as imported, never those the server
        held already (a re-sent input adds nothing)."""
        seconds = max(self.clock() - self.started, 1e-9)
        head = "imported" if finished else "stopped after"
        return (
            f"{head} {counted(tally.appended, 'new item', grouped=True)}"
            f" ({tally.duplicates:,} already there) into"
            f" {counted(len(tally.conversations), 'conversation', grouped=True)}"
            f" in {seconds:,.1f} s"
            f" ({tally.held / seconds:,.0f} items/s):"
            f" {tally.skipped:,} skipped (bad lines), {tally.failed:,} failed"
            + (
                f"; {tally.out_of_order:,} stored with a time before an earlier item's"
                if tally.out_of_order
                else ""
            )
            + (
                f"; {counted(tally.other_branches, 'message', grouped=True)} on other"
                " branches of chats left out"
                if tally.other_branches
                else ""
            )
        )
