"""Where a search gets each file's text: read through the workspace, or from a cache (the
service passes its ChunkCache)."""

from __future__ import annotations

import os
from typing import Protocol

from contextwm.domain.workspace_files import FileText
from contextwm.ports.workspace import Workspace
from contextwm.workspace_files.chunk_cache import ChunkCache


class FileSource(Protocol):
    """Gives a workspace file's text; a cache may stand in for the read."""

    def file(
        self, workspace: Workspace, path: str, max_bytes: int, info: os.stat_result | None = None
    ) -> FileText:
        """The text of a workspace file as Workspace.read_file reads it now.

        Args:
            workspace: the file's workspace; every read goes through its confinement.
            path: workspace-relative.
            max_bytes: a larger file is refused whole.
            info: the path's stat taken just now, when the caller has it (a cache need not
                take another).

        Raises:
            InvalidArgument: a binary file or not a regular file.
            ResourceExhausted: the file is over max_bytes.
            NotFound, PermissionDenied: as Workspace.read_file.
        """
        ...


class ReadThroughFiles:
    """A FileSource that reads every file anew through Workspace.read_file."""

    def file(
        self, workspace: Workspace, path: str, max_bytes: int, info: os.stat_result | None = None
    ) -> FileText:
        return workspace.read_file(path, max_bytes)


class ScanningFiles:
    """A search's view of the chunk cache: files found there are served from it, files read
    now are kept only in its free room. A search reads every file of a tree once; over a
    tree larger than the cache, keeping each would push out everything on every search
    (what chunk reads use included) and leave nothing for the next one."""

    def __init__(self, cache: ChunkCache) -> None:
        self._cache = cache

    def file(
        self, workspace: Workspace, path: str, max_bytes: int, info: os.stat_result | None = None
    ) -> FileText:
        return self._cache.file(workspace, path, max_bytes, evict=False, info=info)
