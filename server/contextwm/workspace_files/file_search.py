"""Scrollable search across a workspace: matching lines with context, a bounded page at a time.

An agent must never blow its context with a broad search, so a search returns one page of
at most page_matches matching lines (and at most max_tokens tokens when set), with the
totals and what is left, and a stateless token for the next page. Every page searches the
whole scope again, so its totals are exact for the files as they are now.

Semantics follow ripgrep's: `.gitignore` honoured, `.git`, symlinks and binary files (a NUL
byte in the first 8,000 bytes) skipped, smart case, `-g`-style globs, context merged. The
pattern is Python `re` syntax, or a literal.

    search_files(workspace, query, counter) -> SearchPage
        page.text            the page as `rg --heading -n -C` prints it
        page.next_page_token ""  on the last page, else pass it back with the same query
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from contextwm.domain.errors import ContextWMError, InvalidArgument, ResourceExhausted
from contextwm.domain.workspace_files import FileMatches, FileSearchQuery, SearchPage
from contextwm.ports.tokens import TokenCounter
from contextwm.ports.workspace import Workspace
from contextwm.workspace_files._search_match import Matcher, compile_pattern, matching_lines
from contextwm.workspace_files._search_page import (
    FileHits,
    Slice,
    file_matches,
    first_matches,
    render,
    slices,
)
from contextwm.workspace_files._search_paths import scoped_files, search_scope
from contextwm.workspace_files._search_token import (
    Position,
    decode_token,
    encode_token,
    query_digest,
)
from contextwm.workspace_files.file_source import FileSource, ReadThroughFiles

__all__ = ["DEFAULT_MAX_FILE_BYTES", "search_files"]

# Larger files are skipped and counted, not searched: generated bundles and data files,
# which an agent would not page through anyway.
DEFAULT_MAX_FILE_BYTES = 1_000_000


# A page as made: its files, their rendered text and its token count.
_Page = tuple[tuple[FileMatches, ...], str, int]


@dataclass(frozen=True, slots=True)
class _Scan:
    """Every file with a match, in order, and what was skipped."""

    hits: list[FileHits]
    searched: int
    binary: int
    too_large: int


def search_files(
    workspace: Workspace,
    query: FileSearchQuery,
    counter: TokenCounter,
    page_token: str = "",
    files: FileSource | None = None,
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> SearchPage:
    """One page of a search across the workspace's files.

    Files are searched in path order (sorted by components, as ripgrep's --sort path); a
    file's part may continue on the next page. Each file contributes at most
    max_matches_per_file matching lines (its FileMatches says `capped` and its real count);
    a line matching several times counts once.

    Args:
        workspace: the files; nothing outside its root is read.
        query: the search; see FileSearchQuery.
        counter: counts the page's tokens (token_count, and max_tokens when set).
        page_token: "" for the first page, else the previous page's next_page_token. The
            page size, context_lines and max_tokens may change between pages; the fields
            that decide the matches may not.
        files: where texts come from; by default read anew through the workspace (the
            service passes its cache).
        max_file_bytes: larger files are skipped and counted in too_large_skipped.

    Returns:
        The page, with total_matches / total_files over the whole search and
        remaining_matches / remaining_files after this page.

    Raises:
        InvalidArgument: an empty pattern, an invalid regex (the message says why), a
            negative or zero size, a glob that cannot be parsed, or a page_token that is
            garbled or belongs to a different search.
        PermissionDenied: query.path leaves the root (`..`, an absolute path elsewhere, a
            symlink pointing out).
        NotFound: query.path does not exist.
        ResourceExhausted: max_tokens is too small for even the page's first matching line
            without context (the message says how many tokens it needs).
    """
    _check_sizes(query, max_file_bytes)
    matcher = compile_pattern(query)
    scope = search_scope(workspace, query.path)
    digest = query_digest(query, scope.path)
    start = decode_token(page_token, digest) if page_token else Position()
    names = scoped_files(workspace, scope, query.include, query.exclude)
    scan = _scan(
        workspace, names, matcher, files or ReadThroughFiles(), query, start, max_file_bytes
    )
    hits = scan.hits
    index, skip = _resume(hits, start)
    parts = slices(hits, index, skip, query.page_matches)
    shown, text, tokens = _fit(parts, query, counter)
    next_index, next_skip = _advance(hits, index, skip, sum(f.shown for f in shown))
    remaining = hits[next_index:]
    return SearchPage(
        files=shown,
        next_page_token=(
            encode_token(digest, Position(hits[next_index].path, next_skip)) if remaining else ""
        ),
        total_matches=sum(len(h.lines) for h in hits),
        total_files=len(hits),
        remaining_matches=sum(len(h.lines) for h in remaining) - next_skip,
        remaining_files=len(remaining),
        files_searched=scan.searched,
        binary_skipped=scan.binary,
        token_count=tokens,
        text=text,
        too_large_skipped=scan.too_large,
    )


def _check_sizes(query: FileSearchQuery, max_file_bytes: int) -> None:
    at_least_one = {
        "max_matches_per_file": query.max_matches_per_file,
        "page_matches": query.page_matches,
        "max_tokens": query.max_tokens,
    }
    for name, value in at_least_one.items():
        if value is not None and value < 1:
            raise InvalidArgument(f"{name} must be at least 1, got {value}")
    if query.context_lines < 0:
        raise InvalidArgument(f"context_lines may not be negative, got {query.context_lines}")
    if max_file_bytes < 0:
        raise InvalidArgument(f"max_file_bytes may not be negative, got {max_file_bytes}")


def _key(path: str) -> list[str]:
    """The listing's sort key: by path components, so `a/b` comes before `a.txt`."""
    return path.split("/")


def _scan(
    workspace: Workspace,
    names: Sequence[str],
    matcher: Matcher,
    source: FileSource,
    query: FileSearchQuery,
    start: Position,
    max_file_bytes: int,
) -> _Scan:
    """Searches every file; keeps the texts of those the page may show."""
    root = os.path.join(workspace.root, "")
    cap = query.max_matches_per_file
    start_key = _key(start.path)
    # The page needs the texts of the files from the start position on until it holds
    # page_matches lines; the earlier and later files only add to the totals.
    wanted = query.page_matches + start.shown
    hits: list[FileHits] = []
    searched = binary = too_large = 0
    for name in names:
        try:
            info = os.lstat(root + name)
        except (OSError, ValueError):
            continue  # gone since the listing
        # Symlinks are never followed (ripgrep's default); directories (a nested repository
        # in git's listing), FIFOs and devices are not files to search.
        if not stat.S_ISREG(info.st_mode):
            continue
        if info.st_size > max_file_bytes:
            too_large += 1
            continue
        try:
            text = source.file(workspace, name, max_file_bytes, info)
        except InvalidArgument:  # a regular file of a size we take: refused as binary
            binary += 1
            continue
        except ResourceExhausted:  # it grew since the lstat
            too_large += 1
            continue
        except ContextWMError:  # deleted, unreadable, or swapped for an escaping link
            continue
        searched += 1
        # Most files of a search have no match: one scan says so before the file's lines
        # are looked at (splitting a file into lines costs more than reading it).
        if not matcher.may_match(text.text):
            continue
        # Only a file the page may show needs its matching lines counted to the end (the
        # page says how many it has); for the others, one past the cap says it is capped.
        keep = wanted > 0 and (not start.path or _key(name) >= start_key)
        lines, count = matching_lines(
            matcher, text.text, text.line_starts, cap, count_to=None if keep else cap + 1
        )
        if not count:
            continue
        if keep:
            wanted -= len(lines)
        hits.append(FileHits(name, tuple(lines), count, text if keep else None))
    return _Scan(hits, searched, binary, too_large)


def _resume(hits: Sequence[FileHits], start: Position) -> tuple[int, int]:
    """(index into hits, matching lines of it already shown) where a page starts."""
    if not start.path:
        return 0, 0
    key = _key(start.path)
    for index, h in enumerate(hits):
        here = _key(h.path)
        if here == key:
            if start.shown < len(h.lines):
                return index, start.shown
            return index + 1, 0  # the file has fewer matches now
        if here > key:
            return index, 0  # the file has gone or lost its matches
    return len(hits), 0


def _advance(hits: Sequence[FileHits], index: int, skip: int, shown: int) -> tuple[int, int]:
    """The position `shown` matching lines after (index, skip)."""
    while index < len(hits) and shown >= len(hits[index].lines) - skip:
        shown -= len(hits[index].lines) - skip
        index, skip = index + 1, 0
    return index, skip + shown if index < len(hits) else 0


def _fit(parts: Sequence[Slice], query: FileSearchQuery, counter: TokenCounter) -> _Page:
    """The page's files, text and token count: all of parts, or under max_tokens as many
    matching lines as fit, with their context, or the first alone without context.

    Raises:
        ResourceExhausted: not even the first matching line alone fits.
    """
    if not parts:
        return (), "", 0
    limit = query.max_tokens
    for context in dict.fromkeys((query.context_lines, 0)):
        page = _largest_fitting(parts, context, counter, limit)
        if page is not None:
            return page
    needed = _page(parts, 1, 0, counter)[2]
    raise ResourceExhausted(
        f"max_tokens {limit} is too small for this page's first matching line: it needs"
        f" {needed} tokens with its path and no context; raise max_tokens to at least {needed}"
    )


def _page(parts: Sequence[Slice], matches: int, context: int, counter: TokenCounter) -> _Page:
    """The first `matches` matching lines of parts with `context` lines around each."""
    files = tuple(file_matches(p, context) for p in first_matches(parts, matches))
    text = render(files)
    return files, text, counter.count(text)


def _largest_fitting(
    parts: Sequence[Slice], context: int, counter: TokenCounter, limit: int | None
) -> _Page | None:
    """The page with the most matching lines whose text has at most `limit` tokens; None
    when not even one fits.

    A page with one more matching line is the same text with more appended, so its count
    is (all but) never smaller, and a binary search finds the cut in a few exact counts.
    Each page returned was counted itself, so it fits whatever the tokenizer merges.
    """
    total = sum(p.count for p in parts)
    page = _page(parts, total, context, counter)
    if limit is None or page[2] <= limit:
        return page
    best: _Page | None = None
    fits, too_many = 0, total
    while too_many - fits > 1:
        middle = (fits + too_many) // 2
        page = _page(parts, middle, context, counter)
        if page[2] <= limit:
            fits, best = middle, page
        else:
            too_many = middle
    return best
