"""A search page's parts: matching lines with merged context, rendered as ripgrep prints them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextwm.domain.workspace_files import FileMatches, FileText, SearchLine


@dataclass(frozen=True, slots=True)
class FileHits:
    """What a search found in one file."""

    path: str
    lines: tuple[int, ...]  # 0-based indexes of the matching lines shown, up to the cap
    matches: int  # matching lines in the whole file; only up to the cap + 1 when file is None
    file: FileText | None  # kept only while the file may still be on the page


@dataclass(frozen=True, slots=True)
class Slice:
    """A run of one file's matching lines on a page: lines[first : first + count]."""

    hits: FileHits
    first: int
    count: int


def slices(hits: Sequence[FileHits], start: int, skip: int, limit: int) -> list[Slice]:
    """The next `limit` matching lines from hits[start] (its first `skip` already shown)."""
    out: list[Slice] = []
    left = limit
    for index in range(start, len(hits)):
        if left == 0:
            break
        first = skip if index == start else 0
        count = min(len(hits[index].lines) - first, left)
        if count > 0:
            out.append(Slice(hits[index], first, count))
            left -= count
    return out


def first_matches(parts: Sequence[Slice], wanted: int) -> list[Slice]:
    """The slices holding the first `wanted` matching lines of parts, the last one cut."""
    out: list[Slice] = []
    for part in parts:
        if wanted <= 0:
            break
        out.append(Slice(part.hits, part.first, min(part.count, wanted)))
        wanted -= part.count
    return out


def file_matches(part: Slice, context: int) -> FileMatches:
    """One slice as a FileMatches: its matching lines, each with `context` lines either side.

    Blocks that overlap or touch are merged, as ripgrep does. A context line that is itself
    a matching line outside the slice (shown on another page, or past the cap) is marked as
    context, so the lines marked as matches are exactly the slice's.

    Args:
        part: the slice; its hits must still hold the file's text.
        context: lines before and after each match.
    """
    file = part.hits.file
    assert file is not None, "the page's files keep their text"
    shown = part.hits.lines[part.first : part.first + part.count]
    last = file.total_lines - 1
    wanted: list[int] = []
    for line in shown:
        low = max(line - context, wanted[-1] + 1 if wanted else 0)
        wanted.extend(range(low, min(line + context, last) + 1))
    marked = set(shown)
    return FileMatches(
        path=part.hits.path,
        lines=tuple(SearchLine(n + 1, _line_text(file, n), n in marked) for n in wanted),
        matches_in_file=part.hits.matches,
        first_match=part.first,
        shown=part.count,
        # lines holds up to the cap, so more matches than lines means the cap was hit.
        capped=part.hits.matches > len(part.hits.lines),
    )


def _line_text(file: FileText, index: int) -> str:
    """Line `index` (0-based) without its ending ("\\n" or "\\r\\n")."""
    starts = file.line_starts
    end = starts[index + 1] if index + 1 < len(starts) else len(file.text)
    text = file.text[starts[index] : end]
    if text.endswith("\n"):
        text = text[:-2] if text.endswith("\r\n") else text[:-1]
    return text


def render(files: Sequence[FileMatches]) -> str:
    """A page as ripgrep's --heading output: each file's path on a line, then `N:line` for a
    match and `N-line` for context, `--` between blocks that are not adjacent, and an empty
    line between files. Every line ends with a line break; no files give ""."""
    out: list[str] = []
    for f in files:
        if out:
            out.append("")
        out.append(f.path)
        previous = -1
        for line in f.lines:
            if previous != -1 and line.number != previous + 1:
                out.append("--")
            out.append(f"{line.number}{':' if line.match else '-'}{line.text}")
            previous = line.number
    return "\n".join(out) + "\n" if out else ""
