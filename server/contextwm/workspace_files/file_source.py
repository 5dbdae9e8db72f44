"""Where a search gets each file's text: read through the workspace, or from a cache (the
service passes its ChunkCache)."""

from __future__ import annotations

from typing import Protocol

from contextwm.domain.workspace_files import FileText
from contextwm.ports.workspace import Workspace


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
