"""An agent's workspace on the shared filesystem: confined reads, project docs, diffs, a map."""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Literal

from contextwm.adapters.code_map import render_map, walk_files
from contextwm.adapters.code_symbols import SymbolCache, grammar_for
from contextwm.errors import (
    ContextWMError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
)
from contextwm.ports.tokens import TokenCounter

# In priority order; the exact name wins over a case variant (Readme.md) of the same doc.
PROJECT_DOCS = ("PENGUIN.md", "AGENTS.md", "CLAUDE.md", "README.md")
_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_FENCE = re.compile(r" {0,3}(```|~~~)")
# git runs with this environment only: no user or system config, no pager, no prompt, no
# lock taken on the agent's index (GIT_OPTIONAL_LOCKS), and a path is never a glob.
_GIT_ENV = {
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_LITERAL_PATHSPECS": "1",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
}
# The agent's repo config must not make us run its programs: fsmonitor hooks, external diff
# drivers and textconv are switched off (a clean filter from .gitattributes still runs).
_GIT_SAFE = ("-c", "core.fsmonitor=false")


@dataclasses.dataclass(frozen=True, slots=True)
class WorkingFile:
    """A file the agent works on, as its content or as its diff against HEAD."""

    path: str
    text: str
    kind: Literal["content", "diff"]
    tokens: int


class Workspace:
    """A directory no path may leave; reads, git and the code map all go through resolve()."""

    def __init__(
        self,
        root: Path,
        *,
        git_timeout: float = 10.0,
        symbol_cache_size: int = 4096,
        max_parse_bytes: int = 512_000,
    ) -> None:
        """Args:
            root: the workspace directory; a symlink to one is followed once, here.
            git_timeout: seconds any one git command may take.
            symbol_cache_size: files whose parsed symbols are kept (least recently used go).
            max_parse_bytes: larger source files are mapped without symbols.

        Raises:
            InvalidArgument: root is not an existing directory.
        """
        if not root.is_dir():
            raise InvalidArgument(f"workspace root {str(root)!r} is not an existing directory")
        # Everything is compared with the real root, so a root reached through a symlink
        # does not make every file in it look outside.
        self._root = Path(os.path.realpath(root))
        # "/work/root/": a component-wise prefix, so /work/root-evil is not inside.
        self._prefix = os.path.join(self._root, "")
        self._git = shutil.which("git")
        self._git_timeout = git_timeout
        self._max_parse_bytes = max_parse_bytes
        self._symbols = SymbolCache(symbol_cache_size)

    @property
    def root(self) -> Path:
        """The real (symlink-free) root directory."""
        return self._root

    def resolve(self, path: str) -> Path:
        """The real path of a workspace-relative path, checked to stay inside the root.

        Args:
            path: relative to the root; "" is the root. The file need not exist.

        Raises:
            PermissionDenied: an absolute path, `..` above the root, or a symlink on the way
                whose target is outside the root.
            InvalidArgument: the path contains a NUL byte.
        """
        if "\0" in path:
            raise InvalidArgument("a workspace path may not contain a NUL byte")
        if os.path.isabs(path):
            raise PermissionDenied(
                f"absolute path {path!r} refused: paths are relative to the workspace root"
            )
        real = os.path.realpath(os.path.join(self._root, path))
        if self._inside(real):
            return Path(real)
        if os.path.normpath(path).split(os.sep)[0] == "..":
            raise PermissionDenied(f"path {path!r} leaves the workspace root")
        raise PermissionDenied(f"path {path!r} leads through a symlink outside the workspace root")

    def read_text(self, path: str, max_bytes: int = 1_000_000) -> str:
        """A file's text, decoded as UTF-8 with undecodable bytes replaced.

        Args:
            path: workspace-relative.
            max_bytes: never truncated to: a larger file is refused whole.

        Raises:
            PermissionDenied: see resolve(), or the file is unreadable to the server.
            NotFound: no such file.
            InvalidArgument: not a regular file (a directory, a FIFO, a device).
            ResourceExhausted: the file is larger than max_bytes (the message gives both).
        """
        return self._read_bytes(path, max_bytes).decode("utf-8", errors="replace")

    def _read_bytes(self, path: str, max_bytes: int) -> bytes:
        real = self.resolve(path)
        # O_NOFOLLOW: the last component cannot have become a symlink since resolve();
        # O_NONBLOCK: opening a FIFO must not hang the server.
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(real, flags)
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise NotFound(f"no file {path!r} in the workspace") from exc
        except OSError as exc:  # EACCES, or ELOOP when swapped for a symlink
            raise PermissionDenied(f"cannot open {path!r}: {exc.strerror}") from exc
        try:
            self._check_opened(fd, path)
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise InvalidArgument(f"{path!r} is not a regular file")
            if info.st_size > max_bytes:
                raise ResourceExhausted(
                    f"file {path!r} has {info.st_size} bytes, over the limit of {max_bytes}"
                )
            with os.fdopen(os.dup(fd), "rb") as handle:
                data = handle.read(max_bytes + 1)
            if len(data) > max_bytes:  # it grew after fstat
                raise ResourceExhausted(f"file {path!r} is over the limit of {max_bytes} bytes")
            return data
        finally:
            os.close(fd)

    def _inside(self, real: str) -> bool:
        # Strings, not Path.is_relative_to: this runs for every file of every codebase map.
        return real == str(self._root) or real.startswith(self._prefix)

    def _check_opened(self, fd: int, path: str) -> None:
        """Closes the race between resolve() and open(): where the fd really points (Linux)."""
        try:
            opened = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # no /proc: resolve() and O_NOFOLLOW are the check
            return
        if not self._inside(opened):
            raise PermissionDenied(f"path {path!r} changed to lead outside the workspace root")

    def project_doc(self, max_bytes: int = 1_000_000) -> tuple[str, str] | None:
        """The first project doc in the root, in PROJECT_DOCS order.

        Names match exactly first, then case-insensitively (Readme.md, agents.md) in sorted
        order. A candidate that escapes the root, is not a file or is over max_bytes is
        skipped for the next one, since one odd file must not cost the agent its docs.

        Returns:
            (file name, text), or None when the root has none.
        """
        try:
            entries = sorted(os.listdir(self._root))
        except OSError:  # the root went away; read_text() would say NotFound for each
            return None
        for wanted in PROJECT_DOCS:
            names = [wanted] if wanted in entries else []
            names += [e for e in entries if e.lower() == wanted.lower() and e != wanted]
            for name in names:
                try:
                    return name, self.read_text(name, max_bytes)
                except ContextWMError:
                    continue
        return None

    def _run_git(self, *args: str) -> bytes | None:
        """git's stdout, or None when git is missing, fails or times out."""
        if self._git is None:
            return None
        try:
            done = subprocess.run(
                [self._git, "-C", str(self._root), *_GIT_SAFE, *args],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=_GIT_ENV,
                timeout=self._git_timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout if done.returncode == 0 else None

    def is_git(self) -> bool:
        """Whether the root is inside a git work tree (asked each time: agents run git init)."""
        return self._run_git("rev-parse", "--is-inside-work-tree") == b"true\n"

    def diff_against_head(self, path: str, max_bytes: int = 1_000_000) -> str | None:
        """A unified diff of one file against its HEAD version.

        The HEAD version comes from `git cat-file blob`, which runs no filters, and the diff
        is made here: `git diff` would run the clean filters the agent's .gitattributes and
        .git/config name, that is, code of the agent's choosing with the sidecar's rights.

        Args:
            path: workspace-relative; resolved first, and git is asked about the real path,
                since git refuses paths through a symlink.
            max_bytes: a longer file or diff counts as no diff (the content is then used).

        Returns:
            The diff; None outside git, without git, with no commit yet, for an untracked or
            unchanged file, or for a diff over max_bytes.

        Raises:
            PermissionDenied: see resolve().
            InvalidArgument: the path is a directory.
        """
        real = self.resolve(path)
        if real.is_dir():
            raise InvalidArgument(f"{path!r} is a directory, not a file")
        if not self.is_git():
            return None
        relative = real.relative_to(self._root).as_posix()
        # "./" makes the path relative to the root, which may be below the repository's top.
        head = self._run_git("cat-file", "blob", f"HEAD:./{relative}")
        if head is None or len(head) > max_bytes:
            return None  # untracked, no commit yet, or too large
        try:
            current = self.read_text(relative, max_bytes)
        except NotFound:
            current = ""  # deleted from the work tree: its diff removes every line
        except ResourceExhausted:
            return None
        before = head.decode("utf-8", errors="replace")
        if before == current:
            return None
        diff = "".join(
            difflib.unified_diff(
                before.splitlines(keepends=True),
                current.splitlines(keepends=True),
                fromfile=f"a/{relative}",
                tofile=f"b/{relative}",
            )
        )
        return diff if len(diff.encode()) <= max_bytes else None

    def working_file(
        self, path: str, counter: TokenCounter, max_bytes: int = 1_000_000
    ) -> WorkingFile:
        """A working file as whichever of its diff against HEAD and its content is smaller.

        Args:
            path: workspace-relative; a tracked file deleted from the working tree is given
                as its (deletion) diff.
            counter: decides which is smaller and fills WorkingFile.tokens.
            max_bytes: the limit for the content, as in read_text(), and for the diff.

        Raises:
            NotFound, PermissionDenied, InvalidArgument, ResourceExhausted: as read_text().
        """
        diff = self.diff_against_head(path, max_bytes)
        try:
            text = self.read_text(path, max_bytes)
        except NotFound:
            if diff is None:
                raise
            return WorkingFile(path, diff, "diff", counter.count(diff))
        tokens = counter.count(text)
        if diff is not None and (diff_tokens := counter.count(diff)) < tokens:
            return WorkingFile(path, diff, "diff", diff_tokens)
        return WorkingFile(path, text, "content", tokens)

    def codebase_map(
        self, counter: TokenCounter, max_tokens: int | None = None, max_files: int = 2000
    ) -> str:
        """A file tree: directories as `name/` lines, files with their top-level symbols.

        Files come from `git ls-files` in a repo (tracked plus untracked, not ignored) or
        from a walk honouring every .gitignore; .git is never listed. Lines are indented two
        spaces per level, in path order, e.g. `  parser.py: class Parser, def parse`.

        Args:
            counter: measures max_tokens.
            max_tokens: when given, the map is cut at a line to fit, all lines included.
            max_files: files beyond this many are not listed.

        Returns:
            The map; a last line `... N more files` says how many files were left out. ""
            when not even that line fits.

        Raises:
            InvalidArgument: a negative max_tokens or max_files.
        """
        if (max_tokens is not None and max_tokens < 0) or max_files < 0:
            raise InvalidArgument("max_tokens and max_files may not be negative")
        return render_map(self._listed_files(), self._file_symbols, counter, max_tokens, max_files)

    def _listed_files(self) -> list[str]:
        """Workspace-relative POSIX paths of the mapped files, sorted by their components."""
        out = self._run_git("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        if out is None:  # not a repo, or no git: honour .gitignore files ourselves
            names = walk_files(self._root, self.read_text)
        else:
            # --cached still lists files deleted from the working tree; the map shows what is.
            # A nested repository comes as one `dir/` entry, listed like a file.
            listed = {os.fsdecode(n).rstrip("/") for n in out.split(b"\0") if n}
            names = [n for n in listed if os.path.lexists(self._root / n)]
        return sorted(names, key=lambda n: n.split("/"))

    def _file_symbols(self, name: str) -> tuple[str, ...]:
        """Top-level symbols, cached per (path, mtime, size); () when unknown or unreadable."""
        if grammar_for(name) is None:
            return ()
        try:
            info = os.stat(self.resolve(name))
        except (ContextWMError, OSError):
            return ()
        if not stat.S_ISREG(info.st_mode) or info.st_size > self._max_parse_bytes:
            return ()
        try:
            return self._symbols.get(
                name,
                (info.st_mtime_ns, info.st_size),
                lambda: self._read_bytes(name, self._max_parse_bytes),
            )
        except ContextWMError:
            return ()


def _boundaries(text: str) -> tuple[list[int], list[int]]:
    """Cut offsets: (paragraph breaks and heading starts, ends of lines).

    Blank lines and `#` lines inside fenced code are not paragraph breaks or headings.
    """
    paragraphs: list[int] = []
    line_ends: list[int] = []
    start, fence, previous_blank, seen_text = 0, "", False, False
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        line = text[start:end].rstrip("\r\n")
        blank = not line.strip()
        if not fence and seen_text and ((blank and not previous_blank) or _HEADING.match(line)):
            paragraphs.append(start)
        if marker := _FENCE.match(line):
            fence = "" if fence == marker.group(1) else fence or marker.group(1)
        if text[end - 1] == "\n":
            line_ends.append(end)
        previous_blank, seen_text = blank, seen_text or not blank
        start = end
    return paragraphs, line_ends


def _longest_fitting(text: str, cuts: list[int], counter: TokenCounter, max_tokens: int) -> int:
    """The largest cut whose prefix fits, by bisection (prefix counts grow with length)."""
    low, high, best = 0, len(cuts) - 1, 0
    while low <= high:
        middle = (low + high) // 2
        if counter.count(text[: cuts[middle]]) <= max_tokens:
            best, low = cuts[middle], middle + 1
        else:
            high = middle - 1
    return best


def trim_at_boundary(text: str, counter: TokenCounter, max_tokens: int) -> str:
    """The longest prefix of text that fits max_tokens and ends at a natural boundary.

    Args:
        text: Markdown or plain text (a project doc, typically).
        counter: the conversation's token counter.
        max_tokens: the share the text may take.

    Returns:
        text itself when it fits; else the longest prefix ending right before a blank line
        or a Markdown heading (those inside fenced code do not count); if not even the
        first paragraph fits, the longest prefix ending after a newline; else "".

    Raises:
        InvalidArgument: max_tokens is negative.
    """
    if max_tokens < 0:
        raise InvalidArgument(f"max_tokens may not be negative, got {max_tokens}")
    if counter.count(text) <= max_tokens:
        return text
    for cuts in _boundaries(text):
        if best := _longest_fitting(text, cuts, counter, max_tokens):
            return text[:best]
    return ""
