"""Where a search gets each file's text: read through the workspace, or from a stat-keyed cache."""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

from contextwm.domain.errors import ContextWMError
from contextwm.domain.workspace_files import FileText
from contextwm.ports.workspace import Workspace
from contextwm.workspace_files.chunk_cache import RACY_NS

# What a cached entry costs besides its text: the FileText, its line-start tuple (8 bytes a
# line, counted apart) and the key. A guess that keeps many tiny files from looking free.
_ENTRY_OVERHEAD = 512


class FileSource(Protocol):
    """Gives a workspace file's text; a cache may stand in for the read."""

    def file(self, workspace: Workspace, path: str, max_bytes: int) -> FileText:
        """The text of a workspace file as Workspace.read_file reads it now.

        Args:
            workspace: the file's workspace; every read goes through its confinement.
            path: workspace-relative.
            max_bytes: a larger file is refused whole.

        Raises:
            InvalidArgument: a binary file or not a regular file.
            ResourceExhausted: the file is over max_bytes.
            NotFound, PermissionDenied: as Workspace.read_file.
        """
        ...


class ReadThroughFiles:
    """A FileSource that reads every file anew through Workspace.read_file."""

    def file(self, workspace: Workspace, path: str, max_bytes: int) -> FileText:
        return workspace.read_file(path, max_bytes)


class StatCachedFiles:
    """A FileSource that keeps the texts it read, at most max_bytes of them, the least
    recently used going first.

    An entry is keyed by the file's device, inode, size, mtime and ctime, so any write (even
    one that puts the mtime back) or a file swapped for another is read anew; a file
    modified within RACY_NS of its read is not kept, since a second write inside the
    timestamp granularity could leave all of those as they were (as ChunkCache does).

    A hit costs one stat() of root/path, never a resolve(): the text was read through the
    workspace's confinement for that very inode, so serving it again cannot show a file
    outside the root. (ChunkCache resolves the path twice per hit, which costs a search
    of a thousand files some 30 ms.) Refusals (binary, too large for the limit asked) are
    kept too, so a binary file is read once.
    """

    def __init__(
        self, max_bytes: int = 256 * 1024 * 1024, *, clock: Callable[[], int] = time.time_ns
    ) -> None:
        """Args:
        max_bytes: the cached texts' total size (characters, plus a small cost each).
        clock: wall-clock nanoseconds, comparable to st_mtime_ns (tests give their own).
        """
        self._clock = clock
        self._max = max_bytes
        self._used = 0
        self._entries: OrderedDict[tuple[object, ...], tuple[FileText | ContextWMError, int]]
        self._entries = OrderedDict()
        # Guards the map and the byte total; reads happen outside it, so two threads may
        # read the same file at once and the second simply replaces the first's entry.
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def file(self, workspace: Workspace, path: str, max_bytes: int) -> FileText:
        root = os.fspath(workspace.root)
        try:
            info = os.stat(f"{root}/{path}")
        except (OSError, ValueError):  # missing, or a NUL byte: the read says what is wrong
            return workspace.read_file(path, max_bytes)
        key = (
            root,
            path,
            max_bytes,
            info.st_dev,
            info.st_ino,
            info.st_size,
            info.st_mtime_ns,
            info.st_ctime_ns,
        )
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
            else:
                self.misses += 1
        if found is not None:
            value = found[0]
            if isinstance(value, ContextWMError):
                # A new instance: re-raising one object would grow its traceback each time.
                raise type(value)(value.message)
            return value
        # Taken after the stat: a later write stamps the file with about this time or later.
        racy = self._clock() - max(info.st_mtime_ns, info.st_ctime_ns) < RACY_NS
        entry: FileText | ContextWMError
        try:
            entry = workspace.read_file(path, max_bytes)
        except ContextWMError as exc:
            entry = exc
        cost = _ENTRY_OVERHEAD + (
            len(entry.text) + 8 * len(entry.line_starts) if isinstance(entry, FileText) else 0
        )
        if cost <= self._max and not racy:
            self._put(key, entry, cost)
        if isinstance(entry, ContextWMError):
            raise entry
        return entry

    def _put(self, key: tuple[object, ...], entry: FileText | ContextWMError, cost: int) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._used -= old[1]
            self._entries[key] = (entry, cost)
            self._used += cost
            while self._used > self._max:
                _, (_, freed) = self._entries.popitem(last=False)
                self._used -= freed
