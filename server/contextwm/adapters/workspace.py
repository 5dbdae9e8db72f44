"""An agent's workspace on the shared filesystem: confined reads, project docs, diffs, a map."""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path

from contextwm.adapters.code_map import render_map, walk_files
from contextwm.adapters.code_symbols import SymbolCache
from contextwm.adapters.grammars import grammar_for
from contextwm.domain.errors import (
    ContextWMError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
)
from contextwm.domain.workspace_files import FileText
from contextwm.lru import Lru
from contextwm.ports.tokens import TokenCounter
from contextwm.ports.workspace import WorkingFile

# A NUL byte among a file's first this many bytes makes it binary (git's heuristic).
BINARY_PROBE_BYTES = 8000
# In priority order; the exact name wins over a case variant (Readme.md) of the same doc.
PROJECT_DOCS = ("PENGUIN.md", "AGENTS.md", "CLAUDE.md", "README.md")
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


class Workspace:
    """A directory no path may leave; reads, git and the code map all go through resolve()."""

    def __init__(
        self,
        root: Path,
        *,
        git_timeout: float = 10.0,
        symbol_cache_size: int = 4096,
        file_cache_size: int = 256,
        max_parse_bytes: int = 512_000,
    ) -> None:
        """Args:
            root: the workspace directory; a symlink to one is followed once, here.
            git_timeout: seconds any one git command may take.
            symbol_cache_size: files whose parsed symbols are kept (least recently used go).
            file_cache_size: working files kept as last given (least recently used go).
            max_parse_bytes: larger source files are mapped without symbols.

        Raises:
            InvalidArgument: root is not an existing directory.
        """
        if not root.is_dir():
            raise InvalidArgument(f"workspace root {str(root)!r} is not an existing directory")
        # Everything is compared with the real root, so a root reached through a symlink
        # does not make every file in it look outside.
        self._given = os.path.normpath(os.path.abspath(root))
        self._root = Path(os.path.realpath(root))
        # "/work/root/": a component-wise prefix, so /work/root-evil is not inside.
        self._prefix = os.path.join(self._root, "")
        self._git = shutil.which("git")
        self._git_timeout = git_timeout
        self._max_parse_bytes = max_parse_bytes
        self._symbols = SymbolCache(symbol_cache_size)
        self._files: Lru[tuple[object, ...], WorkingFile] = Lru(file_cache_size)

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

    def relative(self, path: str) -> str:
        """path relative to the root, checked by resolve(); an absolute path inside the root
        (as given or as its real path) is accepted, since agents often name files so.

        Raises:
            PermissionDenied: an absolute path outside the root, or see resolve().
            InvalidArgument: the path is empty or contains a NUL byte.
        """
        if not path or "\0" in path:
            raise InvalidArgument("a workspace path must be non-empty and free of NUL bytes")
        if os.path.isabs(path):
            norm = os.path.normpath(path)
            for base in (self._given, str(self._root)):
                if norm.startswith(os.path.join(base, "")):
                    path = norm[len(base) + 1 :]
                    break
            else:
                raise PermissionDenied(
                    f"absolute path {path!r} is outside the workspace root {str(self._root)!r}"
                )
        self.resolve(path)
        return os.path.normpath(path)

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

    def read_file(self, path: str, max_bytes: int) -> FileText:
        """A text file's lines as read now, with the hash of its bytes.

        Args:
            path: workspace-relative (see relative() for absolute paths inside the root).
            max_bytes: a larger file is refused whole, never cut.

        Raises:
            InvalidArgument: a binary file (a NUL byte in its first 8,000 bytes, git's test),
                or not a regular file; see read_text() for the others.
        """
        name = self.relative(path)
        data = self._read_bytes(name, max_bytes)
        if b"\0" in data[:BINARY_PROBE_BYTES]:
            raise InvalidArgument(f"{path!r} is a binary file; only text files can be read")
        try:
            text, replaced = data.decode("utf-8"), False
        except UnicodeDecodeError:
            text, replaced = data.decode("utf-8", errors="replace"), True
        return FileText(
            path=Path(name).as_posix(),
            text=text,
            sha256=hashlib.sha256(data).hexdigest(),
            size=len(data),
            replaced=replaced,
        )

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
        if self._git is None or not self._in_git_tree():
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

    def _in_git_tree(self) -> bool:
        """Whether git could find a repository here: a `.git` in the root or above it (git's
        own discovery, with our fixed environment). A few stats spare a plain directory the
        git process (2 ms) on every listing."""
        places = (self._root, *self._root.parents)
        return any(os.path.lexists(os.path.join(d, ".git")) for d in places)

    def head_commit(self) -> str | None:
        """HEAD's commit id; None outside git, without git, or before the first commit (asked
        each time: agents run git init and commit)."""
        out = self._run_git("rev-parse", "--verify", "-q", "HEAD^{commit}")
        return out.decode().strip() if out else None

    def diff_against_head(
        self, path: str, max_bytes: int = 1_000_000, *, head: str | None = ""
    ) -> str | None:
        """A unified diff of one file against its HEAD version.

        The HEAD version comes from `git cat-file blob`, which runs no filters, and the diff
        is made here: `git diff` would run the clean filters the agent's .gitattributes and
        .git/config name, that is, code of the agent's choosing with the sidecar's rights.

        Args:
            path: workspace-relative; resolved first, and git is asked about the real path,
                since git refuses paths through a symlink.
            max_bytes: a longer file or diff counts as no diff (the content is then used).
            head: HEAD's commit id from head_commit() (None: not in git); "" asks git.

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
        if head == "":
            head = self.head_commit()
        if head is None:
            return None
        relative = real.relative_to(self._root).as_posix()
        # "./" makes the path relative to the root, which may be below the repository's top.
        blob = self._run_git("cat-file", "blob", f"{head}:./{relative}")
        if blob is None or len(blob) > max_bytes:
            return None  # untracked, no commit yet, or too large
        try:
            current = self.read_text(relative, max_bytes)
        except NotFound:
            current = ""  # deleted from the work tree: its diff removes every line
        except ResourceExhausted:
            return None
        before = blob.decode("utf-8", errors="replace")
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

    def working_files(
        self, paths: Sequence[str], counter: TokenCounter, max_bytes: int = 1_000_000
    ) -> list[WorkingFile | ContextWMError]:
        """Each file as whichever of its diff against HEAD and its content is smaller.

        git is asked for HEAD once; a file unchanged since an earlier call (same size,
        mtime, inode and HEAD) comes from a cache without being read or diffed again.

        Args:
            paths: workspace-relative; a tracked file deleted from the working tree is given
                as its (deletion) diff.
            counter: decides which is smaller and fills WorkingFile.tokens.
            max_bytes: the limit for the content, as in read_text(), and for the diff.

        Returns:
            Per path, the file or the error reading it raised (NotFound, PermissionDenied,
            InvalidArgument, ResourceExhausted, as read_text()).
        """
        head = self.head_commit()
        out: list[WorkingFile | ContextWMError] = []
        for path in paths:
            try:
                out.append(self._working_file(path, counter, max_bytes, head))
            except ContextWMError as e:
                out.append(e)
        return out

    def working_file(
        self, path: str, counter: TokenCounter, max_bytes: int = 1_000_000
    ) -> WorkingFile:
        """One file as working_files() gives it. Raises what it would return."""
        (f,) = self.working_files([path], counter, max_bytes)
        if isinstance(f, ContextWMError):
            raise f
        return f

    def _working_file(
        self, path: str, counter: TokenCounter, max_bytes: int, head: str | None
    ) -> WorkingFile:
        try:
            text: str | None = self.read_text(path, max_bytes)
        except NotFound:
            text = None  # deleted from the work tree: its diff, if tracked
        # Keyed by content, not mtime: a rewrite within one clock tick must not be missed.
        digest = hashlib.blake2b(text.encode(), digest_size=16).digest() if text else b""
        key = (path, text is None, digest, head, counter.encoding, max_bytes)
        cached = self._files.get(key)
        if cached is not None:
            return cached
        diff = self.diff_against_head(path, max_bytes, head=head)
        if text is None:
            if diff is None:
                raise NotFound(f"no file {path!r} in the workspace")
            f = WorkingFile(path, diff, "diff", counter.count(diff))
        else:
            tokens = counter.count(text)
            if diff is not None and (diff_tokens := counter.count(diff)) < tokens:
                f = WorkingFile(path, diff, "diff", diff_tokens)
            else:
                f = WorkingFile(path, text, "content", tokens)
        self._files.put(key, f)
        return f

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
        return render_map(self.listed_files(), self._file_symbols, counter, max_tokens, max_files)

    def listed_files(self) -> list[str]:
        """Workspace-relative POSIX paths of the mapped files, sorted by their components."""
        out = self._run_git("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        if out is None:  # not a repo, or no git: honour .gitignore files ourselves
            names = walk_files(self._root, self.read_text)
        else:
            # --cached still lists files deleted from the working tree; the map shows what is.
            # A nested repository comes as one `dir/` entry, listed like a file.
            listed = {os.fsdecode(n).rstrip("/") for n in out.split(b"\0") if n}
            root = os.path.join(self._root, "")  # strings: a Path per file costs more than lstat
            names = [n for n in listed if os.path.lexists(root + n)]
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


class Workspaces:
    """The server's workspace policy: a default root and the roots conversations may name.

    Opened workspaces are kept (their symbol caches with them) per real root, the most
    recently used MAX_OPEN of them.
    """

    MAX_OPEN = 64

    def __init__(self, default_root: str = "", allowed_roots: tuple[str, ...] = ()) -> None:
        """Args:
            default_root: the workspace of conversations that name none; "" for none.
            allowed_roots: directories under which a conversation's own root must lie; the
                default root is always allowed.

        Raises:
            InvalidArgument: a root that is not an existing directory.
        """
        self._default = default_root
        allowed = [r for r in (default_root, *allowed_roots) if r]
        for r in allowed:
            if not os.path.isdir(r):
                raise InvalidArgument(f"workspace root {r!r} is not an existing directory")
        self._allowed = tuple(os.path.join(os.path.realpath(r), "") for r in allowed)
        self._open: Lru[str, Workspace] = Lru(self.MAX_OPEN)

    def check_root(self, root: str) -> None:
        if root:
            self._allowed_real(root)

    def _allowed_real(self, root: str) -> str:
        """The real path of a root the policy allows (see check_root for the errors)."""
        if not os.path.isabs(root):
            raise InvalidArgument(f"workspace_root must be an absolute path, got {root!r}")
        if not os.path.isdir(root):
            raise InvalidArgument(f"workspace_root {root!r} is not an existing directory")
        real = os.path.realpath(root)
        if not any(os.path.join(real, "").startswith(a) for a in self._allowed):
            allowed = ", ".join(a.rstrip(os.sep) for a in self._allowed) or "none"
            raise PermissionDenied(
                f"workspace_root {root!r} is outside the roots this server allows ({allowed});"
                " start the server with --workspace or list the root in workspace_allowed_roots"
            )
        return real

    def open(self, root: str) -> Workspace | None:
        root = root or self._default
        if not root:
            return None
        real = self._allowed_real(root)
        ws = self._open.get(real)
        if ws is None:  # two racing calls may both open it: harmless, one is kept
            ws = Workspace(Path(root))
            self._open.put(real, ws)
        return ws
