"""Value types of an agent's workspace files: chunks of a file, search pages, edits, tools."""

from __future__ import annotations

import enum
import functools
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import accumulate, repeat


class ChunkStrategy(enum.Enum):
    """How a file is cut into chunks."""

    LINES = "lines"  # fixed windows of lines
    FUNCTIONS = "functions"  # at function and class boundaries, from a real parser
    SEMANTIC = "semantic"  # consecutive definitions grouped while they fit; header apart


@dataclass(frozen=True, slots=True)
class ChunkSpec:
    """How to cut one file.

    max_lines bounds every strategy; max_tokens, when set, bounds each chunk's token count
    instead (counted in `encoding`), so a caller can ask for the largest chunk that fits.
    """

    strategy: ChunkStrategy = ChunkStrategy.SEMANTIC
    max_lines: int = 100
    max_tokens: int | None = None
    encoding: str = "cl100k_base"


@dataclass(frozen=True, slots=True)
class LineRange:
    """One chunk of a plan: 1-based first and last line, both included."""

    first_line: int
    last_line: int
    # A definition longer than the limit was cut at a line boundary to make this chunk.
    split: bool = False


@dataclass(frozen=True, slots=True)
class ChunkPlan:
    """Where a file's chunks begin and end, for one ChunkSpec.

    strategy is the one actually used; fallback says why it differs from the one asked for
    ("" when it does not), e.g. "no parser for .md files: cut by lines".
    """

    strategy: ChunkStrategy
    ranges: tuple[LineRange, ...]
    fallback: str = ""


def line_starts(text: str) -> tuple[int, ...]:
    """Where each line starts, lines ending at "\n" only: str.splitlines also ends lines at
    form feeds and Unicode separators, which editors, git and ripgrep do not."""
    if not text:
        return ()
    # Every step runs in C (split, len, add, accumulate): a loop of str.find calls in
    # Python costs as much as the rest of reading a file.
    parts = text.split("\n")
    starts = list(accumulate(map(operator.add, map(len, parts), repeat(1)), initial=0))
    del starts[len(parts) :]
    if not parts[-1]:  # the text ends with a line break: no line starts after it
        starts.pop()
    return tuple(starts)


# Not slotted: line_starts is computed on first use and kept in the instance's __dict__.
@dataclass(frozen=True)
class FileText:
    """A workspace file as read: its decoded text, where each line starts, and how it was
    decoded. Lines end at "\n" only and keep their endings; line n (1-based) is
    text[line_starts[n - 1] : line_starts[n]] (the last one runs to the end)."""

    path: str  # workspace-relative, POSIX separators
    text: str
    sha256: str  # of the bytes on disk, hex: what an edit's expected hash is compared with
    size: int  # bytes on disk
    # Bytes that are not UTF-8 were replaced (U+FFFD); the read says so.
    replaced: bool = False

    @functools.cached_property
    def line_starts(self) -> tuple[int, ...]:
        """One per line; () for an empty file. Computed on first use: a search looks at the
        lines of the few files that match, and splitting a file costs more than reading it."""
        return line_starts(self.text)

    @property
    def total_lines(self) -> int:
        return len(self.line_starts)

    def lines(self, first: int, last: int) -> str:
        """Lines first..last (1-based, both included) as one string, with their endings;
        "" when last < first (the one chunk of an empty file is lines 1..0)."""
        if last < first:
            return ""
        starts = self.line_starts
        end = starts[last] if last < len(starts) else len(self.text)
        return self.text[starts[first - 1] : end]


@dataclass(frozen=True, slots=True)
class CodeDefinition:
    """A definition in a source file (a function, class, struct, impl, namespace, a statement
    holding a closure...), its lines including the comments, decorators and attributes
    directly above it.

    Lines are 1-based and included. The children are the definitions nested in it (methods,
    inner functions), in order, inside first_line..last_line and never sharing a line.
    """

    kind: str  # the grammar's node type, e.g. "function_definition", "impl_item"
    name: str  # a best-effort label; "" when there is none (a lambda, `namespace {`)
    first_line: int
    last_line: int
    children: tuple[CodeDefinition, ...] = ()


@dataclass(frozen=True, slots=True)
class FileDefinitions:
    """A source file's top-level definitions, in order and never sharing a line, or why
    there are none to go by."""

    language: str  # the grammar that parsed the file; "" when none applies
    definitions: tuple[CodeDefinition, ...]
    # Why the file has no usable definitions, in words for a person ("no parser for .md
    # files"); "" when it was parsed (even when it defines nothing).
    problem: str = ""


@dataclass(frozen=True, slots=True)
class ChunkCacheStats:
    """What the cache of files read in chunks holds and how often it answered."""

    hits: int  # file reads served without reading the file again
    misses: int  # file reads that read the file (first read, changed, racily clean, too big)
    plan_hits: int  # chunk plans served from the cache
    plan_misses: int  # chunk plans computed
    bytes: int  # estimated memory held: texts, line starts, plans
    entries: int  # files held
    evictions: int  # files dropped to stay under max_bytes
    max_bytes: int


@dataclass(frozen=True, slots=True)
class FileChunk:
    """One chunk of a file as a read returns it."""

    path: str
    index: int  # 0-based
    first_line: int  # 1-based, included
    last_line: int  # included
    content: str
    total_lines: int
    total_chunks: int
    token_count: int  # in the conversation's encoding
    strategy: ChunkStrategy  # the one used
    fallback: str  # why it is not the one asked for; "" when it is
    split: bool  # a definition longer than the limit was cut to make this chunk
    replaced: bool  # bytes that are not UTF-8 were replaced
    sha256: str  # of the whole file on disk
    seq: int = 0  # the conversation item that records the read; 0 when not recorded

    @property
    def has_more(self) -> bool:
        return self.index + 1 < self.total_chunks

    @property
    def has_previous(self) -> bool:
        return self.index > 0


class CaseMode(enum.Enum):
    SENSITIVE = "sensitive"
    INSENSITIVE = "insensitive"
    SMART = "smart"  # insensitive unless the pattern has an upper-case letter


@dataclass(frozen=True, slots=True)
class FileSearchQuery:
    """A search across a workspace; see file_search for what each field does."""

    pattern: str
    regex: bool = False
    case: CaseMode = CaseMode.SMART
    include: tuple[str, ...] = ()  # gitignore-style globs; empty: every file
    exclude: tuple[str, ...] = ()
    path: str = ""  # a directory or file under the root to search in; "": the root
    max_matches_per_file: int = 20
    context_lines: int = 3
    page_matches: int = 50  # matching lines per page
    max_tokens: int | None = None  # a page's rendered text fits this when set


@dataclass(frozen=True, slots=True)
class SearchLine:
    """A line of a search result: a match, or context around one."""

    number: int  # 1-based
    text: str  # without its line ending
    match: bool


@dataclass(frozen=True, slots=True)
class FileMatches:
    """A file's part of a page: its matching lines with context, in line order.

    A jump in line numbers between consecutive lines marks a gap (rendered as `--`).
    """

    path: str
    lines: tuple[SearchLine, ...]
    matches_in_file: int  # matching lines in the whole file
    first_match: int  # index among the file's matching lines of this part's first, 0-based
    shown: int  # matching lines in this part
    capped: bool  # the file has more matching lines than max_matches_per_file


@dataclass(frozen=True, slots=True)
class SearchPage:
    """One page of a search, and what is left after it."""

    files: tuple[FileMatches, ...]
    next_page_token: str  # "" on the last page
    total_matches: int  # matching lines over all files (each file counted up to its cap)
    total_files: int  # files with a match
    remaining_matches: int  # after this page
    remaining_files: int  # files with matches not yet shown in full
    files_searched: int
    binary_skipped: int
    token_count: int  # of the page's rendered text
    text: str  # the page rendered as ripgrep-like text: path, then `N:line` / `N-context`
    too_large_skipped: int = 0  # files over the search's size limit, not read


@dataclass(frozen=True, slots=True)
class EditResult:
    """A search/replace edit that was applied."""

    path: str
    first_line: int  # the replaced text's lines in the new file, 1-based
    last_line: int
    sha256_before: str
    sha256_after: str


@dataclass(frozen=True, slots=True)
class ToolRules:
    """Which tools an agent may use in which session state.

    The highest-priority active state decides: an exclusive state allows only its own tools;
    any other allows the base tools plus its own. With no state active, the base and the
    unrestricted tools are allowed.
    """

    base: tuple[str, ...]
    unrestricted: tuple[str, ...]
    # State -> its tools, in priority order (the first active one decides).
    restrictions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    exclusive: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ToolAvailability:
    tools: tuple[str, ...]
    states: tuple[str, ...]  # the session's active states
    deciding_state: str  # "" when none is active


@dataclass(frozen=True, slots=True)
class ToolCheck:
    tool: str
    allowed: bool
    reason: str  # why not, naming the state; "" when allowed
    deciding_state: str


@dataclass(frozen=True, slots=True)
class FileView:
    """The file a conversation views: how it was cut and which chunks were read."""

    path: str
    spec: ChunkSpec  # as asked for: scrolling cuts the file the same way
    chunk_index: int
    total_chunks: int
    seen: tuple[int, ...]  # ascending
    sha256: str  # of the file when last read; another hash means the chunks moved


@dataclass(frozen=True, slots=True)
class SessionState:
    """A conversation's session: the states that decide its tools, and its view."""

    states: tuple[str, ...] = ()  # in the order they were set
    view: FileView | None = None
