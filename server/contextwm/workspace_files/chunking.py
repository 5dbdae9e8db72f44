"""Where a workspace file's chunks begin and end: by lines, by definitions, or by related
definitions grouped while they fit; and finding the chunk of a line or a text.

Every plan tiles the file: its ranges cover each line once, in order, with no gap. The limit
is spec.max_lines, or spec.max_tokens when set, counted exactly on each chunk's text.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from contextwm.domain.errors import FailedPrecondition, InvalidArgument, NotFound
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
from contextwm.workspace_files._packing import Atom, Packer, Sizer


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
    sizer = Sizer(file, spec, counter)
    whole = Atom(1, file.total_lines)
    if spec.strategy is ChunkStrategy.LINES:
        return ChunkPlan(ChunkStrategy.LINES, Packer(sizer, ()).pack([whole]))
    found = parser.definitions(file.path, file.text)
    if found.problem:
        ranges = Packer(sizer, ()).pack([whole])
        return ChunkPlan(ChunkStrategy.LINES, ranges, f"{found.problem}; cut by lines")
    definitions = _in_order(found.definitions, 1, file.total_lines)
    packer = Packer(sizer, definitions)
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


def _definition_atom(d: CodeDefinition) -> Atom:
    """A definition as its head, then each nested definition with the lines just above it,
    then its tail (a closing brace), so it can be cut between them."""
    parts: list[Atom] = []
    at = d.first_line
    for child in _in_order(d.children, d.first_line, d.last_line):
        inner = _definition_atom(child)
        if child.first_line == at:
            parts.append(inner)
        elif at == d.first_line:
            parts += [Atom(at, child.first_line - 1), inner]  # the head: signature, docstring
        else:
            parts.append(Atom(at, child.last_line, (Atom(at, child.first_line - 1), inner)))
        at = child.last_line + 1
    if parts and at <= d.last_line:
        parts.append(Atom(at, d.last_line))
    return Atom(d.first_line, d.last_line, tuple(parts), definition=True)


def _in_order(definitions: Sequence[CodeDefinition], first: int, last: int) -> list[CodeDefinition]:
    """The definitions inside first..last that follow each other without overlapping: the
    parser promises as much, and the plan must tile the file even if it did not."""
    kept: list[CodeDefinition] = []
    for d in definitions:
        after = kept[-1].last_line if kept else first - 1
        if after < d.first_line <= d.last_line <= last:
            kept.append(d)
    return kept


def _by_definition(packer: Packer, definitions: list[CodeDefinition], total: int) -> None:
    """FUNCTIONS: a chunk per definition; the code between them cut by lines."""
    at = 1
    for d in definitions:
        if d.first_line > at:
            _between(packer, Atom(at, d.first_line - 1))
        packer.seal()
        packer.add(_definition_atom(d))
        packer.seal()
        at = d.last_line + 1
    if at <= total:
        _between(packer, Atom(at, total))


def _between(packer: Packer, stretch: Atom) -> None:
    """Code between definitions in chunks of its own; the blank lines before it may join
    the chunk before, and blank lines alone either neighbour."""
    code = stretch.first
    while code <= stretch.last and packer.blank(Atom(code, code)):
        code += 1
    if code > stretch.first:
        packer.add(Atom(stretch.first, code - 1))
    if code <= stretch.last:
        packer.seal()
        packer.add(Atom(code, stretch.last))
        packer.seal()


def _by_group(packer: Packer, definitions: list[CodeDefinition], total: int) -> None:
    """SEMANTIC: the header apart, then definitions grouped while they fit."""
    first = definitions[0].first_line if definitions else total + 1
    if first > 1:
        packer.add(Atom(1, first - 1))
        packer.seal()
    at = first
    for d in definitions:
        unit = _definition_atom(d)
        if d.first_line > at:  # the lines since the definition before go with this one
            unit = Atom(at, d.last_line, (Atom(at, d.first_line - 1), unit))
        if packer.fits(unit):
            packer.add(unit)
        else:  # cut, as FUNCTIONS does: its chunks hold nothing else
            packer.seal()
            packer.add(unit)
            packer.seal()
        at = d.last_line + 1
    if definitions and at <= total:
        packer.add(Atom(at, total))
