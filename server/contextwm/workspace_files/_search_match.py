"""A search pattern: compiled once, run over a file's whole text to find its matching lines."""

from __future__ import annotations

import re
import sys
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, islice
from typing import cast

import regex

from contextwm.domain.errors import InvalidArgument
from contextwm.domain.workspace_files import CaseMode, FileSearchQuery
from contextwm.workspace_files._search_literals import required_literals
from contextwm.workspace_files._search_trim import trimmed

# Candidate lines a regex is first run over; each later block is four times larger.
_FIRST_BLOCK = 64

# Escapes (\S, \W, \D, \A ...) name classes or anchors, not letters, and a group's name is no
# literal either: neither makes a smart-case pattern case sensitive, as in ripgrep.
_NOT_LITERAL = re.compile(r"\\.|\(\?P<[^>]*>|\(\?P=[^)]*\)", re.DOTALL)


def case_sensitive(pattern: str, is_regex: bool, mode: CaseMode) -> bool:
    """Whether a pattern is matched case-sensitively (SMART: when it has an upper-case
    letter, escapes and group names not counted for a regex, as ripgrep's --smart-case)."""
    if mode is not CaseMode.SMART:
        return mode is CaseMode.SENSITIVE
    letters = _NOT_LITERAL.sub("", pattern) if is_regex else pattern
    return any(c.isupper() for c in letters)


@dataclass(frozen=True, slots=True)
class Matcher:
    """A query's compiled pattern, and the shortcuts its shape allows.

    whole_lines is the pattern followed by the rest of its line, set when a match can
    neither be empty nor take a line break (a literal): one match is then one matching
    line, counted in C with no step per line in Python. candidates finds the lines worth
    trying a regex on: those holding one of the literals every match contains (each match
    runs to its line's end, as whole_lines does).
    """

    pattern: re.Pattern[str]
    whole_lines: re.Pattern[str] | None = None
    candidates: re.Pattern[str] | None = None

    def may_match(self, text: str) -> bool:
        """False only when no line of text can match: one scan with the cheapest pattern
        that every matching line matches (matching_lines scans the whole text too)."""
        probe = self.whole_lines or self.candidates or self.pattern
        return probe.search(text) is not None


def _fast(source: str, ignore_case: bool) -> re.Pattern[str]:
    """A pattern of literal text compiled with the `regex` package, whose search for a
    literal (above all a case-insensitive one) is several times faster than `re`'s (`re`
    can only step through the text a character at a time once case is ignored). For
    literals both engines match the same strings; it offers the same methods."""
    flags = regex.MULTILINE | (regex.IGNORECASE if ignore_case else 0)
    return cast("re.Pattern[str]", regex.compile(source, flags))


def compile_pattern(query: FileSearchQuery) -> Matcher:
    """The query's pattern as regexes over a file's whole text.

    A regex is Python `re` syntax, compiled by `re`; a literal is escaped. MULTILINE makes
    `^` and `$` match at every line's start and end, as in a line-by-line search.

    Raises:
        InvalidArgument: an empty pattern, a literal spanning lines, or a regex `re` refuses
            (the message quotes re's error and where it is).
    """
    if not query.pattern:
        raise InvalidArgument("pattern is empty: give the text or regex to search for")
    if not query.regex and "\n" in query.pattern:
        raise InvalidArgument(
            "pattern contains a line break, but a search matches within one line: search"
            " for one of its lines"
        )
    ignore_case = not case_sensitive(query.pattern, query.regex, query.case)
    if not query.regex:
        literal = regex.escape(query.pattern)
        return Matcher(
            _fast(literal, ignore_case),
            whole_lines=_fast(rf"(?:{literal})[^\n]*", ignore_case),
        )
    try:
        pattern = re.compile(query.pattern, re.MULTILINE | (re.IGNORECASE if ignore_case else 0))
    except re.error as exc:
        raise InvalidArgument(
            f"pattern {query.pattern!r} is not a valid regular expression: {exc}"
            " (Python `re` syntax; set regex to false to search for the text as it is)"
        ) from exc
    except (OverflowError, RecursionError) as exc:  # absurd repeat counts, deep nesting
        raise InvalidArgument(f"pattern {query.pattern!r} is too complex to compile") from exc
    # The pattern's own flags: an inline (?i) makes the literals case-insensitive too.
    literals = required_literals(query.pattern, pattern.flags)
    if not literals or any("\n" in s for s in literals):
        return Matcher(trimmed(pattern))
    alternatives = "|".join(regex.escape(s) for s in literals)
    candidates = _fast(rf"(?:{alternatives})[^\n]*", bool(pattern.flags & re.IGNORECASE))
    return Matcher(trimmed(pattern), candidates=candidates)


def matching_lines(
    matcher: Matcher,
    text: str,
    starts: Sequence[int],
    keep: int,
    *,
    count_to: int | None = None,
) -> tuple[list[int], int]:
    """The lines of a text that the pattern matches, each counted once.

    Args:
        matcher: from compile_pattern().
        text: the file's text.
        starts: where each line starts (FileText.line_starts).
        keep: how many of the first matching lines to return.
        count_to: stop counting at this many matching lines (at least keep); None counts
            them all.

    Returns:
        (0-based indexes of the first `keep` matching lines, count of the matching lines).
    """
    limit = sys.maxsize if count_to is None else max(count_to, keep)
    if matcher.whole_lines is not None:
        return _whole_lines(matcher.whole_lines, text, starts, keep, limit)
    if matcher.candidates is not None:
        return _candidate_lines(matcher.pattern, matcher.candidates, text, starts, keep, limit)
    return _line_by_line(matcher.pattern, text, starts, keep, limit)


def _whole_lines(
    whole_lines: re.Pattern[str], text: str, starts: Sequence[int], keep: int, limit: int
) -> tuple[list[int], int]:
    """Each match runs to its line's end, so the next one is on a later line."""
    at: list[int] = []
    end = 0
    matches = whole_lines.finditer(text)
    for m in matches:
        at.append(m.start())
        end = m.end()
        if len(at) == keep:
            break
    count = len(at)
    if count == keep and count:
        if limit == sys.maxsize:
            count += len(whole_lines.findall(text, end))
        else:
            count += sum(1 for _ in islice(matches, limit - count))
    found: list[int] = []
    line = 0
    for position in at:
        line = bisect_right(starts, position, line) - 1
        found.append(line)
    return found, count


def _candidate_lines(
    pattern: re.Pattern[str],
    candidates: re.Pattern[str],
    text: str,
    starts: Sequence[int],
    keep: int,
    limit: int,
) -> tuple[list[int], int]:
    """The regex run over the lines holding one of its required literals, joined: a match
    lies within a line, so every matching line holds one of them. candidates runs to its
    line's end, so each match is a new line and its end is the line's. One C-level scan of
    the joined lines costs less than a call per line (30,000 lines in a 1,000-file tree).
    The lines are taken in growing blocks, so a count that stops at `limit` leaves the
    rest of a file with many candidates unscanned."""
    rfind = text.rfind
    lines = ((rfind("\n", 0, m.start()) + 1, m.end()) for m in candidates.finditer(text))
    matched: list[int] = []  # where each matching line starts in text
    size = _FIRST_BLOCK
    while len(matched) < limit:
        spans = list(islice(lines, size))
        if not spans:
            break
        joined = "\n".join([text[a:b] for a, b in spans])
        # Where each candidate line starts in joined; the last entry is one past its end.
        offsets = list(accumulate((b - a + 1 for a, b in spans), initial=0))
        hits = _joined_lines(pattern, joined, offsets, limit - len(matched))
        matched += [spans[i][0] for i in hits]
        size *= 4
    found: list[int] = []
    line = 0
    for at in matched[:keep]:
        line = bisect_right(starts, at, line) - 1
        found.append(line)
    return found, len(matched)


def _joined_lines(
    pattern: re.Pattern[str], joined: str, offsets: list[int], limit: int
) -> list[int]:
    """Indexes of the first `limit` joined lines the pattern matches within (as
    _line_by_line, on them)."""
    hits: list[int] = []
    search = pattern.search
    size = len(joined)
    pos = 0
    line = 0
    while pos <= size and len(hits) < limit:
        m = search(joined, pos)
        if m is None:
            break
        line = bisect_right(offsets, m.start(), line) - 1
        if line >= len(offsets) - 1:  # an empty match after the last line
            break
        end = offsets[line + 1] - 1  # the line's end: its "\n" in joined, or the end
        if m.end() > end and search(joined, offsets[line], end) is None:
            pos = offsets[line + 1]
            continue
        hits.append(line)
        pos = offsets[line + 1]
    return hits


def _line_by_line(
    pattern: re.Pattern[str], text: str, starts: Sequence[int], keep: int, limit: int
) -> tuple[list[int], int]:
    """One regex runs over the whole text, so a file without a match costs one C-level scan
    and no per-line work. After a match the search goes on at the next line's start: a
    line matching many times costs one step. A match that runs past its line's end (`\\s`
    and `[^x]` can take the line break) is checked again on its line alone, since a search
    matches within lines, as ripgrep does."""
    found: list[int] = []
    count = 0
    lines = len(starts)
    size = len(text)
    search = pattern.search
    pos = 0
    line = 0
    while pos < size and count < limit:
        m = search(text, pos)
        if m is None:
            break
        at = m.start()
        line = bisect_right(starts, at, line) - 1
        following = starts[line + 1] if line + 1 < lines else size
        content_end = following - 1 if text[following - 1] == "\n" else following
        if at > content_end:  # an empty match after the last line break: no line there
            break
        if m.end() > content_end and search(text, starts[line], content_end) is None:
            pos = following
            continue
        count += 1
        if len(found) < keep:
            found.append(line)
        pos = following
    return found, count
