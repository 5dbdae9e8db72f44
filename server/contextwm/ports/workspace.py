"""The Workspace port: an agent's files, as the contributors of a budgeted context read them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol

from contextwm.domain.errors import ContextWMError
from contextwm.domain.workspace_files import FileText
from contextwm.ports.tokens import TokenCounter


@dataclasses.dataclass(frozen=True, slots=True)
class WorkingFile:
    """A file the agent works on, as its content or as its diff against HEAD."""

    path: str
    text: str
    kind: Literal["content", "diff"]
    tokens: int


class Workspace(Protocol):
    """A directory no path may leave. Every method raises PermissionDenied for a path that
    would (`..`, an absolute path elsewhere, a symlink pointing out)."""

    @property
    def root(self) -> Path: ...

    def relative(self, path: str) -> str:
        """path relative to the root (an absolute path inside the root is accepted), checked."""
        ...

    def project_doc(self) -> tuple[str, str] | None:
        """(file name, text) of the first of PENGUIN.md, AGENTS.md, CLAUDE.md, README.md."""
        ...

    def working_files(
        self, paths: Sequence[str], counter: TokenCounter
    ) -> list[WorkingFile | ContextWMError]:
        """Each file's content, or its diff against HEAD in a git workspace when smaller;
        per path the file or the error reading it (NotFound, PermissionDenied, ...)."""
        ...

    def codebase_map(self, counter: TokenCounter, max_tokens: int | None = None) -> str:
        """The file tree with top-level symbols, cut at a line to fit max_tokens."""
        ...


class WorkspaceFiles(Protocol):
    """The confined reads of a workspace that reading files in chunks needs."""

    @property
    def root(self) -> Path: ...

    def relative(self, path: str) -> str:
        """path relative to the root (an absolute path inside the root is accepted), checked.

        Raises:
            PermissionDenied: the path leaves the root.
            InvalidArgument: an empty path or one with a NUL byte.
        """
        ...

    def resolve(self, path: str) -> Path:
        """The real path of a workspace-relative path, checked to stay inside the root."""
        ...

    def read_file(self, path: str, max_bytes: int) -> FileText:
        """A text file's lines as read now, with the hash of its bytes.

        Raises:
            NotFound, PermissionDenied: no such file, or not readable or outside the root.
            InvalidArgument: a binary file, or not a regular file.
            ResourceExhausted: the file is larger than max_bytes.
        """
        ...


class Workspaces(Protocol):
    """Opens conversations' workspaces under the server's policy."""

    def check_root(self, root: str) -> None:
        """Checks a conversation's workspace_root: "" (the default) or an allowed directory.

        Raises:
            InvalidArgument: not an absolute path to an existing directory.
            PermissionDenied: outside every root the server allows.
        """
        ...

    def open(self, root: str) -> Workspace | None:
        """The workspace of a conversation's workspace_root ("": the server's default);
        None when neither names one. Raises as check_root."""
        ...
