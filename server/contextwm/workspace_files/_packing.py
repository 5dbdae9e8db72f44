"""Filling chunks greedily from atoms (ranges of lines kept together while they fit), and
sizing them in lines or in exact tokens."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from contextwm.domain.errors import ResourceExhausted
from contextwm.domain.workspace_files import ChunkSpec, CodeDefinition, FileText, LineRange
from contextwm.ports.tokens import TokenCounter

# Exact counts spent per chunk start on growing a chunk past its per-line estimate: the
# estimate is a little high (cl100k merges runs of newlines and indentation across lines),
# and a few exact counts win the last lines back without counting the chunk on every line.
_MAX_PROBES = 4


@dataclass(frozen=True, slots=True)
class Atom:
    """Lines kept together when they fit; when not, cut at its parts, else at lines."""

    first: int
    last: int
    parts: tuple[Atom, ...] = ()
    # A definition: the chunks it is cut into are marked split.
    definition: bool = False


class Sizer:
    """Whether lines fit the limit: counted in lines, or in tokens estimated as the sum of
    the lines' own counts, counted exactly near the limit and for every chunk made."""

    def __init__(self, file: FileText, spec: ChunkSpec, counter: TokenCounter) -> None:
        """Raises:
        ResourceExhausted: with max_tokens, a single line has more tokens than that.
        """
        self._file = file
        self._count = counter.count
        self.max_lines = spec.max_lines
        self.max_tokens = spec.max_tokens
        text, starts = file.text, file.line_starts
        ends = (*starts[1:], len(text))
        lines = [text[s:e] for s, e in zip(starts, ends, strict=True)]
        # prefix[n]: lines 1..n that are blank, so a range's blankness is one subtraction.
        self._blank_prefix = [0]
        for line in lines:
            self._blank_prefix.append(self._blank_prefix[-1] + (not line.strip()))
        self._tokens_prefix = [0]
        self._known: dict[int, tuple[int, int]] = {}  # first -> (last, exact count) that fit
        self._probes: dict[int, int] = {}
        if self.max_tokens is None:
            return
        for number, line in enumerate(lines, start=1):
            tokens = self._count(line)
            if tokens > self.max_tokens:
                raise ResourceExhausted(
                    f"line {number} of {file.path} has {tokens} tokens, over max_tokens"
                    f" {self.max_tokens}: no chunk can hold it; ask for max_tokens of at"
                    f" least {tokens}, or leave max_tokens unset to cut by max_lines"
                    " (the `lines` strategy)"
                )
            self._tokens_prefix.append(self._tokens_prefix[-1] + tokens)

    def blank(self, first: int, last: int) -> bool:
        """Whether lines first..last hold nothing but whitespace."""
        return self._blank_prefix[last] - self._blank_prefix[first - 1] == last - first + 1

    def fits(self, first: int, last: int) -> bool:
        """Whether lines first..last fit the limit as one chunk (by the estimate, or by an
        exact count when the estimate is only a little over)."""
        limit = self.max_tokens
        if limit is None:
            return last - first + 1 <= self.max_lines
        known = self._known.get(first)
        if known is not None and known[0] <= last:
            estimate = known[1] + self._tokens_prefix[last] - self._tokens_prefix[known[0]]
        else:
            estimate = self._tokens_prefix[last] - self._tokens_prefix[first - 1]
        if estimate <= limit:
            return True
        # Far over: no exact count will bring it under. Near: count, a few times at most.
        probes = self._probes.get(first, 0)
        if estimate > limit + limit // 8 + 8 or probes >= _MAX_PROBES:
            return False
        self._probes[first] = probes + 1
        return self.exact(first, last) <= limit

    def exact(self, first: int, last: int) -> int:
        """The tokens of lines first..last as one text; remembered when they fit."""
        known = self._known.get(first)
        if known is not None and known[0] == last:
            return known[1]
        tokens = self._count(self._file.lines(first, last))
        fit = self.max_tokens is not None and tokens <= self.max_tokens
        if fit and (known is None or known[0] < last):
            self._known[first] = (last, tokens)
        return tokens


@dataclass(slots=True)
class _Open:
    """The chunk being filled."""

    first: int
    last: int
    split: bool
    blank: bool
    sealed: bool = False  # takes blank lines only, so no more code joins it


class Packer:
    """Fills chunks greedily in file order from atoms, cutting an atom that does not fit
    alone at its parts, and a part without parts at its lines."""

    def __init__(self, sizer: Sizer, definitions: Sequence[CodeDefinition]) -> None:
        self._sizer = sizer
        self._open: _Open | None = None
        self._ranges: list[LineRange] = []
        # Where each top-level definition starts and ends, to tell whether a cut forced by
        # an exact count lands inside one.
        self._starts = [d.first_line for d in definitions]
        self._ends = [d.last_line for d in definitions]

    def pack(self, atoms: Sequence[Atom]) -> tuple[LineRange, ...]:
        for atom in atoms:
            self.add(atom)
        return self.finish()

    def finish(self) -> tuple[LineRange, ...]:
        self._close()
        return tuple(self._ranges)

    def fits(self, atom: Atom) -> bool:
        return self._sizer.fits(atom.first, atom.last)

    def blank(self, atom: Atom) -> bool:
        return self._sizer.blank(atom.first, atom.last)

    def seal(self) -> None:
        """Lets no more code join the open chunk (blank lines still may)."""
        if self._open is not None:
            self._open.sealed = True

    def add(self, atom: Atom, split: bool = False) -> None:
        """Adds an atom to the open chunk if it fits there, else starts the next chunk with
        it; an atom that fits no chunk is cut at its parts or lines, which are then added
        the same way. split marks chunks made of a definition cut so."""
        if self._join(atom.first, atom.last, split):
            return
        if self._sizer.fits(atom.first, atom.last):
            self._start(atom.first, atom.last, split)
        elif atom.parts:
            for part in atom.parts:
                self.add(part, split or atom.definition)
        else:
            split = split or atom.definition
            for line in range(atom.first, atom.last + 1):
                if not self._join(line, line, split):
                    self._start(line, line, split)

    def _join(self, first: int, last: int, split: bool) -> bool:
        current = self._open
        if current is None:
            return False
        blank = self._sizer.blank(first, last)
        if current.sealed and not (blank or current.blank):
            return False
        if not self._sizer.fits(current.first, last):
            return False
        if current.blank and not blank:
            current.sealed = False  # blank lines before code: the code decides from here
        current.last = last
        current.split = current.split or split
        current.blank = current.blank and blank
        return True

    def _start(self, first: int, last: int, split: bool) -> None:
        self._close()
        self._open = _Open(first, last, split, self._sizer.blank(first, last))

    def _close(self) -> None:
        """Emits the open chunk; one whose exact count is over max_tokens (the per-line
        estimate was low) is cut into the longest pieces that fit."""
        current, self._open = self._open, None
        if current is None:
            return
        first, last = current.first, current.last
        cut_before = False  # the piece starts where such a cut went through a definition
        limit = self._sizer.max_tokens
        while limit is not None and self._sizer.exact(first, last) > limit:
            low, high = first, last - 1  # a line alone always fits: checked up front
            while low < high:
                middle = (low + high + 1) // 2
                if self._sizer.exact(first, middle) <= limit:
                    low = middle
                else:
                    high = middle - 1
            cut_after = self._inside_definition(low)
            self._ranges.append(LineRange(first, low, current.split or cut_before or cut_after))
            first, cut_before = low + 1, cut_after
        self._ranges.append(LineRange(first, last, current.split or cut_before))

    def _inside_definition(self, line: int) -> bool:
        """Whether a cut after this line cuts a top-level definition."""
        i = bisect.bisect_right(self._starts, line) - 1
        return i >= 0 and line < self._ends[i]
