"""A cache of workspace files read in chunks: each file's text and its chunk plans, kept
while the file is unchanged, least recently used dropped first to stay under a byte bound.

A file is unchanged while its (mtime, size, inode, ctime) are, except when it was modified
within RACY_NS of being read: a second write inside the filesystem's timestamp granularity
can leave all four as they were (git calls such an entry "racily clean"), so it is read
again and its hash compared until it is older than that.
"""

from __future__ import annotations

import bisect
import os
import posixpath
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from contextwm.domain.errors import ContextWMError, InvalidArgument
from contextwm.domain.workspace_files import (
    ChunkCacheStats,
    ChunkPlan,
    ChunkSpec,
    FileText,
    LineRange,
)
from contextwm.ports.code_definitions import DefinitionParser
from contextwm.ports.tokens import TokenCounter
from contextwm.ports.workspace import Workspace
from contextwm.workspace_files.chunking import plan_chunks

# 2 s: the coarsest file timestamps in use (FAT's); ext4, XFS and tmpfs stamp files at the
# kernel's clock tick, a few milliseconds, well inside it.
RACY_NS = 2_000_000_000

Stamp = tuple[int, int, int, int]  # st_mtime_ns, st_size, st_ino, st_ctime_ns

# Memory of what the cache holds: sys.getsizeof of the real objects, rounded up to the
# allocator's 16-byte blocks, plus what getsizeof does not see. Ints above 256 are objects
# of their own (smaller ones are shared). Checked against tracemalloc by the tests.


def _block(size: int) -> int:
    return (size + 15) // 16 * 16


_INT_BYTES = _block(sys.getsizeof(2**20))
_NS_BYTES = _block(sys.getsizeof(2**61))  # nanosecond timestamps
_RANGE_BYTES = _block(sys.getsizeof(LineRange(1, 1)))
# An OrderedDict keeps a linked-list node besides its hash-table slot (about 100 bytes an
# entry, measured); a plan's slot in its entry's dict, and its spec key's object.
_ORDERED_SLOT_BYTES = 120
_PLAN_SLOT_BYTES = 100 + _block(sys.getsizeof(ChunkSpec()))


@dataclass(slots=True)
class _Entry:
    file: FileText
    stamp: Stamp
    racy: bool  # modified within RACY_NS of being read: the stamp alone proves nothing
    bytes: int
    plans: dict[ChunkSpec, ChunkPlan] = field(default_factory=dict)
    # Whether bytes counts the file's line starts (computed by the first plan, not by a
    # search that found no match in it).
    starts_counted: bool = False


def _plain(path: str) -> str | None:
    """path normalised when it is a plain relative path (no NUL, not absolute, not above the
    root), else None: then Workspace.relative must check and translate it."""
    if not path or "\0" in path or path.startswith("/"):
        return None
    name = posixpath.normpath(path)
    return None if name == ".." or name.startswith("../") else name


class ChunkCache:
    """Files and their chunk plans per (workspace root, path); thread-safe.

    The lock guards the entries and counters only: files are read and plans made outside
    it, so one slow read never holds up the other threads (two threads missing the same
    file both read it; either result is kept).
    """

    def __init__(
        self,
        max_bytes: int,
        parser: DefinitionParser,
        *,
        stat: Callable[[str], os.stat_result] = os.stat,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        """Args:
            max_bytes: the memory the cache may hold, estimated; a file whose entry alone
                would be larger is read each time, never cached.
            parser: finds definitions for the plans.
            stat: the stat of a real path (tests give a frozen one).
            clock: wall-clock nanoseconds, comparable to st_mtime_ns.

        Raises:
            InvalidArgument: max_bytes under 0.
        """
        if max_bytes < 0:
            raise InvalidArgument(f"the chunk cache's max_bytes may not be negative: {max_bytes}")
        self._max = max_bytes
        self._parser = parser
        self._stat = stat
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._bytes = 0
        self._hits = self._misses = self._plan_hits = self._plan_misses = self._evictions = 0

    def file(
        self,
        workspace: Workspace,
        path: str,
        max_bytes: int,
        *,
        evict: bool = True,
        info: os.stat_result | None = None,
    ) -> FileText:
        """A file as Workspace.read_file reads it, from the cache while it is unchanged.

        A stat is taken (or given) every time; the file is read again when its stamp changed,
        when it was racily clean, or when it is larger than this read's max_bytes allows.

        Args:
            workspace: does the confined reads.
            path: workspace-relative, or absolute inside the root.
            max_bytes: a larger file is refused, as by read_file.
            evict: keep a file read now even if older entries must go; False keeps it only
                in free room (a search reads every file once: over a tree larger than the
                cache it would otherwise push out everything on every search, for nothing).
            info: the path's stat just taken by the caller (an lstat that found a regular
                file is one), used instead of taking another.

        Raises:
            What workspace.relative() and read_file() raise; the file's entry is dropped.
        """
        # A hit costs one stat, no resolve: the entry was read through the workspace's
        # confinement for that very file, and a symlink swapped in since leads to another
        # file, whose stamp differs, so the read that follows checks the path afresh.
        name = _plain(path)
        if name is None:
            try:
                name = Path(workspace.relative(path)).as_posix()
            except ContextWMError:
                self._drop((str(workspace.root), posixpath.normpath(path)))
                raise
        key = (str(workspace.root), name)
        try:
            if info is None:
                info = self._stat(os.path.join(workspace.root, name))
            stamp: Stamp | None = (info.st_mtime_ns, info.st_size, info.st_ino, info.st_ctime_ns)
        except OSError:
            stamp = None  # read_file says what is wrong
        with self._lock:
            entry = self._entries.get(key)
            if (
                entry is not None
                and entry.stamp == stamp
                and not entry.racy
                and entry.file.size <= max_bytes
            ):
                self._entries.move_to_end(key)
                self._hits += 1
                return entry.file
            self._misses += 1
        # After the stat: a later write stamps the file with about this time or later, so
        # only a file last modified within RACY_NS of now could hide one behind its stamp.
        now = self._clock()
        try:
            read = workspace.read_file(name, max_bytes)
        except ContextWMError:
            self._drop(key)
            raise
        if stamp is None:
            self._drop(key)
            return read
        return self._keep(key, read, stamp, racy=now - stamp[0] < RACY_NS, evict=evict)

    def plan(self, file: FileText, root: Path, spec: ChunkSpec, counter: TokenCounter) -> ChunkPlan:
        """plan_chunks() for a file, kept with the file's entry while its content is the same.

        Args:
            file: as file() returned it.
            root: the workspace root the file was read from (Workspace.root).
            spec, counter: as plan_chunks() takes them.

        Raises:
            What plan_chunks() raises.
        """
        key = (str(root), file.path)
        # The encoding only matters to a plan with max_tokens.
        spec_key = spec if spec.max_tokens is not None else replace(spec, encoding="")
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.file.sha256 == file.sha256:
                found = entry.plans.get(spec_key)
                if found is not None:
                    self._entries.move_to_end(key)
                    self._plan_hits += 1
                    return found
            self._plan_misses += 1
        plan = plan_chunks(file, spec, counter, self._parser)
        with self._lock:
            entry = self._entries.get(key)
            fresh = entry is not None and entry.file.sha256 == file.sha256
            if entry is not None and fresh and spec_key not in entry.plans:
                size = _plan_bytes(plan)
                if not entry.starts_counted:
                    size += _starts_bytes(entry.file)
                    entry.starts_counted = True
                entry.plans[spec_key] = plan
                entry.bytes += size
                self._bytes += size
                self._evict()
        return plan

    def invalidate(self, root: Path, path: str) -> bool:
        """Forgets a file (after an edit or an erasure, say); path as FileText.path has it.
        Returns whether the cache held it."""
        return self._drop((str(root), posixpath.normpath(path)))

    # Read by the metrics at scrape time, without the lock (each is one int).
    @property
    def hits(self) -> int:
        return self._hits

    @property
    def misses(self) -> int:
        return self._misses

    @property
    def bytes(self) -> int:
        return self._bytes

    @property
    def entries(self) -> int:
        return len(self._entries)

    @property
    def evictions(self) -> int:
        return self._evictions

    def stats(self) -> ChunkCacheStats:
        with self._lock:
            return ChunkCacheStats(
                hits=self._hits,
                misses=self._misses,
                plan_hits=self._plan_hits,
                plan_misses=self._plan_misses,
                bytes=self._bytes,
                entries=len(self._entries),
                evictions=self._evictions,
                max_bytes=self._max,
            )

    def _keep(
        self, key: tuple[str, str], read: FileText, stamp: Stamp, *, racy: bool, evict: bool
    ) -> FileText:
        """Stores a file just read; an entry of the same content keeps its text and plans.

        Returns:
            The file to hand out: the one held before when the content is the same.
        """
        size = _entry_bytes(key, read)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.bytes
            if size > self._max or (not evict and self._bytes + size > self._max):
                return read  # it would push out everything else and still not fit
            entry = _Entry(read, stamp, racy, size)
            if old is not None and old.file.sha256 == read.sha256:
                entry.file, entry.plans, entry.bytes = old.file, old.plans, old.bytes
                entry.starts_counted = old.starts_counted
            self._entries[key] = entry
            self._bytes += entry.bytes
            self._evict()
            return entry.file

    def _drop(self, key: tuple[str, str]) -> bool:
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.bytes
        return old is not None

    def _evict(self) -> None:
        """Drops least recently used entries until the bound holds; the lock is held."""
        while self._bytes > self._max and self._entries:
            _, old = self._entries.popitem(last=False)
            self._bytes -= old.bytes
            self._evictions += 1


_ENTRY_OBJECT_BYTES = _block(sys.getsizeof(_Entry(FileText("", "", "", 0), (0, 0, 0, 0), False, 0)))


def _entry_bytes(key: tuple[str, str], file: FileText) -> int:
    """The memory an entry holds: the file's text, path, hash, its attributes, its stamp,
    the entry itself, its plans' dict and its key (its line starts once a plan counts them)."""
    objects = (file, vars(file), file.text, file.path, file.sha256, (0, 0, 0, 0), {0: 0}, *key)
    return (
        sum(_block(sys.getsizeof(o)) for o in objects)
        + 2 * _INT_BYTES  # the stamp's size and inode
        + 2 * _NS_BYTES  # its times
        + _ENTRY_OBJECT_BYTES
        + _ORDERED_SLOT_BYTES
    )


def _starts_bytes(file: FileText) -> int:
    """The memory of a file's line starts: the tuple and its ints (those of the first lines,
    under 257, are shared)."""
    starts = file.line_starts
    large = len(starts) - bisect.bisect_right(starts, 256)
    return _block(sys.getsizeof(starts)) + large * _INT_BYTES


def _plan_bytes(plan: ChunkPlan) -> int:
    large = sum((r.first_line > 256) + (r.last_line > 256) for r in plan.ranges)
    return (
        _block(sys.getsizeof(plan))
        + _block(sys.getsizeof(plan.ranges))
        + len(plan.ranges) * _RANGE_BYTES
        + large * _INT_BYTES
        + _block(sys.getsizeof(plan.fallback))
        + _PLAN_SLOT_BYTES
    )
