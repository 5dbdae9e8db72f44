"""Where a workspace file's chunks begin and end: by lines, by definitions, or by related
definitions grouped while they fit; and finding the chunk of a line or a text.

Every plan tiles the file: its ranges cover each line once, in order, with no gap. The limit
is spec.max_lines, or spec.max_tokens when set, counted exactly on each chunk's text.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from contextwm.domain.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
)
from contextwm.domain.workspace_files import (
    ChunkPlan,
    ChunkSpec,
    ChunkStrategy,
    CodeDefinition,
    FileChunk,
    FileText,
    LineRange,
)
from contextwm.ports.code_definitions import DefinitionParser
from contextwm.ports.tokens import TokenCounter

# Exact counts spent per chunk start on growing a chunk past its per-line estimate: the
# estimate is a little high (cl100k merges runs of newlines and indentation across lines),
# and a few exact counts win the last lines back without counting the chunk on every line.
_MAX_PROBES = 4


def plan_chunks(
    file: FileText, spec: ChunkSpec, counter: TokenCounter, parser: DefinitionParser
) -> ChunkPlan:
    """Cuts a file into chunks that each fit the spec's limit.

    - LINES: windows of max_lines lines (or as many lines as fit max_tokens).
    - FUNCTIONS: each top-level definition, with the comments, decorators and attributes
      directly above it, is a chunk of its own; the code between definitions is cut by
      lines; blank lines join the chunk before them when they fit (else the one after).
    - SEMANTIC: the header (everything before the first definition) is a chunk of its own;
      then each definition, with the lines between it and the one before, joins the chunk
      before it while that fits, so related code stays together.

    A definition over the limit is cut at its nested definitions (methods, inner functions,
    closures, each with the lines just above it) where it can, else at line boundaries, and
    its chunks have `split` set. A file with no parser for its language, or one the parser
    cannot make sense of, is cut by LINES, and the plan's `fallback` says why.

    An empty file is one chunk of lines 1..0: first_line 1, last_line 0, no content.

    Args:
        file: the file as read.
        spec: the strategy and the limit; with max_tokens set, max_lines is not used.
        counter: counts max_tokens; its encoding must be spec.encoding then.
        parser: finds the definitions for FUNCTIONS and SEMANTIC.

    Returns:
        The plan: the strategy used, the ranges, and why it falls back, if it does.

    Raises:
        InvalidArgument: max_lines or max_tokens under 1, or a counter of another encoding.
        ResourceExhausted: with max_tokens, a single line has more tokens than that.
    """
    _check(spec, counter)
    if file.total_lines == 0:
        return ChunkPlan(spec.strategy, (LineRange(1, 0),))
    sizer = _Sizer(file, spec, counter)
    whole = _Atom(1, file.total_lines)
    if spec.strategy is ChunkStrategy.LINES:
        return ChunkPlan(ChunkStrategy.LINES, _Packer(sizer, ()).pack([whole]))
    found = parser.definitions(file.path, file.text)
    if found.problem:
        ranges = _Packer(sizer, ()).pack([whole])
        return ChunkPlan(ChunkStrategy.LINES, ranges, f"{found.problem}; cut by lines")
    definitions = _in_order(found.definitions, 1, file.total_lines)
    packer = _Packer(sizer, definitions)
    if spec.strategy is ChunkStrategy.FUNCTIONS:
        _by_definition(packer, definitions, file.total_lines)
    else:
        _by_group(packer, definitions, file.total_lines)
    return ChunkPlan(spec.strategy, packer.finish())


def chunk_at(
    file: FileText,
    plan: ChunkPlan,
    index: int,
    counter: TokenCounter,
    *,
    requested: ChunkStrategy,
) -> FileChunk:
    """One chunk of a file, with its text and token count.

    Args:
        file: the file the plan was made for.
        plan: from plan_chunks().
        index: 0-based.
        counter: counts the chunk's tokens, in the conversation's encoding.
        requested: the strategy asked for; the chunk's `fallback` says why it was not used
            ("" when it was).

    Raises:
        InvalidArgument: no chunk with that index (the message says how many there are).
        FailedPrecondition: the plan was made for a file with another number of lines.
    """
    count = len(plan.ranges)
    if not 0 <= index < count:
        raise InvalidArgument(
            f"no chunk {index} in {file.path}: it has {count} chunk{'s' * (count != 1)},"
            f" numbered 0 to {count - 1}"
        )
    if plan.ranges[-1].last_line != file.total_lines:
        raise FailedPrecondition(
            f"the chunk plan of {file.path} was made for another version of the file"
        )
    chunk = plan.ranges[index]
    content = file.lines(chunk.first_line, chunk.last_line)
    fallback = ""
    if plan.strategy is not requested:
        fallback = plan.fallback or f"cut by {plan.strategy.value}, not {requested.value}"
    return FileChunk(
        path=file.path,
        index=index,
        first_line=chunk.first_line,
        last_line=chunk.last_line,
        content=content,
        total_lines=file.total_lines,
        total_chunks=count,
        token_count=counter.count(content),
        strategy=plan.strategy,
        fallback=fallback,
        split=chunk.split,
        replaced=file.replaced,
        sha256=file.sha256,
    )


def chunk_of_line(plan: ChunkPlan, line: int) -> int:
    """The index of the chunk holding a line (1-based).

    Raises:
        InvalidArgument: the line is not in the file (the message gives its line count).
    """
    total = plan.ranges[-1].last_line
    if not 1 <= line <= total:
        raise InvalidArgument(
            f"line {line} is not in the file: it has {total} line{'s' * (total != 1)}"
        )
    return bisect.bisect_right(plan.ranges, line, key=lambda r: r.first_line) - 1


def chunk_of_text(file: FileText, plan: ChunkPlan, text: str, *, from_line: int = 1) -> int:
    """The index of the chunk where text first occurs at or after a line.

    Args:
        file: the file the plan was made for.
        plan: from plan_chunks().
        text: found exactly (case and whitespace as given); may span lines, and the chunk
            holding its first character is the one returned.
        from_line: 1-based; occurrences starting before this line are passed over.

    Raises:
        InvalidArgument: an empty text, or from_line not in the file.
        NotFound: the text does not occur at or after from_line.
    """
    if not text:
        raise InvalidArgument("the text to find is empty")
    total = file.total_lines
    if total and not 1 <= from_line <= total:
        raise InvalidArgument(
            f"from_line {from_line} is not in {file.path}: it has {total} line{'s' * (total != 1)}"
        )
    shown = text if len(text) <= 80 else f"{text[:77]}..."
    at = file.text.find(text, file.line_starts[from_line - 1]) if total else -1
    if at < 0:
        where = f" at or after line {from_line}" if from_line > 1 else ""
        raise NotFound(f"{shown!r} does not occur in {file.path}{where}")
    return chunk_of_line(plan, bisect.bisect_right(file.line_starts, at))


def _check(spec: ChunkSpec, counter: TokenCounter) -> None:
    if spec.max_lines < 1:
        raise InvalidArgument(f"max_lines must be at least 1, got {spec.max_lines}")
    if spec.max_tokens is None:
        return
    if spec.max_tokens < 1:
        raise InvalidArgument(f"max_tokens must be at least 1, got {spec.max_tokens}")
    if counter.encoding != spec.encoding:
        raise InvalidArgument(
            f"max_tokens is counted in {spec.encoding!r}, but the counter counts"
            f" {counter.encoding!r}"
        )


@dataclass(frozen=True, slots=True)
class _Atom:
    """Lines kept together when they fit; when not, cut at its parts, else at lines."""

    first: int
    last: int
    parts: tuple[_Atom, ...] = ()
    # A definition: the chunks it is cut into are marked split.
    definition: bool = False


def _definition_atom(d: CodeDefinition) -> _Atom:
    """A definition as its head, then each nested definition with the lines just above it,
    then its tail (a closing brace), so it can be cut between them."""
    parts: list[_Atom] = []
    at = d.first_line
    for child in _in_order(d.children, d.first_line, d.last_line):
        inner = _definition_atom(child)
        if child.first_line == at:
            parts.append(inner)
        elif at == d.first_line:
            parts += [_Atom(at, child.first_line - 1), inner]  # the head: signature, docstring
        else:
            parts.append(_Atom(at, child.last_line, (_Atom(at, child.first_line - 1), inner)))
        at = child.last_line + 1
    if parts and at <= d.last_line:
        parts.append(_Atom(at, d.last_line))
    return _Atom(d.first_line, d.last_line, tuple(parts), definition=True)


def _in_order(definitions: Sequence[CodeDefinition], first: int, last: int) -> list[CodeDefinition]:
    """The definitions inside first..last that follow each other without overlapping: the
    parser promises as much, and the plan must tile the file even if it did not."""
    kept: list[CodeDefinition] = []
    for d in definitions:
        after = kept[-1].last_line if kept else first - 1
        if after < d.first_line <= d.last_line <= last:
            kept.append(d)
    return kept


def _by_definition(packer: _Packer, definitions: list[CodeDefinition], total: int) -> None:
    """FUNCTIONS: a chunk per definition; the code between them cut by lines."""
    at = 1
    for d in definitions:
        if d.first_line > at:
            _between(packer, _Atom(at, d.first_line - 1))
        packer.seal()
        packer.add(_definition_atom(d))
        packer.seal()
        at = d.last_line + 1
    if at <= total:
        _between(packer, _Atom(at, total))


def _between(packer: _Packer, stretch: _Atom) -> None:
    """Code between definitions in chunks of its own; the blank lines before it may join
    the chunk before, and blank lines alone either neighbour."""
    code = stretch.first
    while code <= stretch.last and packer.blank(_Atom(code, code)):
        code += 1
    if code > stretch.first:
        packer.add(_Atom(stretch.first, code - 1))
    if code <= stretch.last:
        packer.seal()
        packer.add(_Atom(code, stretch.last))
        packer.seal()


def _by_group(packer: _Packer, definitions: list[CodeDefinition], total: int) -> None:
    """SEMANTIC: the header apart, then definitions grouped while they fit."""
    first = definitions[0].first_line if definitions else total + 1
    if first > 1:
        packer.add(_Atom(1, first - 1))
        packer.seal()
    at = first
    for d in definitions:
        unit = _definition_atom(d)
        if d.first_line > at:  # the lines since the definition before go with this one
            unit = _Atom(at, d.last_line, (_Atom(at, d.first_line - 1), unit))
        if packer.fits(unit):
            packer.add(unit)
        else:  # cut, as FUNCTIONS does: its chunks hold nothing else
            packer.seal()
            packer.add(unit)
            packer.seal()
        at = d.last_line + 1
    if definitions and at <= total:
        packer.add(_Atom(at, total))


class _Sizer:
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
        return self._blank_prefix[last] - self._blank_prefix[first - 1] == last - first + 1

    def fits(self, first: int, last: int) -> bool:
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


class _Packer:
    """Fills chunks greedily in file order from atoms, cutting an atom that does not fit
    alone at its parts, and a part without parts at its lines."""

    def __init__(self, sizer: _Sizer, definitions: Sequence[CodeDefinition]) -> None:
        self._sizer = sizer
        self._open: _Open | None = None
        self._ranges: list[LineRange] = []
        # Where each top-level definition starts and ends, to tell whether a cut forced by
        # an exact count lands inside one.
        self._starts = [d.first_line for d in definitions]
        self._ends = [d.last_line for d in definitions]

    def pack(self, atoms: Sequence[_Atom]) -> tuple[LineRange, ...]:
        for atom in atoms:
            self.add(atom)
        return self.finish()

    def finish(self) -> tuple[LineRange, ...]:
        self._close()
        return tuple(self._ranges)

    def fits(self, atom: _Atom) -> bool:
        return self._sizer.fits(atom.first, atom.last)

    def blank(self, atom: _Atom) -> bool:
        return self._sizer.blank(atom.first, atom.last)

    def seal(self) -> None:
        """Lets no more code join the open chunk (blank lines still may)."""
        if self._open is not None:
            self._open.sealed = True

    def add(self, atom: _Atom, split: bool = False) -> None:
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
