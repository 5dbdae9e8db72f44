"""Which files a search reads: the workspace's listing, narrowed to a path and by globs."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import pathspec

from contextwm.domain.errors import InvalidArgument, NotFound
from contextwm.ports.workspace import Workspace


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a search looks: the whole root (""), a directory, or one file."""

    path: str  # workspace-relative real path, POSIX; "" for the root
    is_file: bool


def search_scope(workspace: Workspace, path: str) -> Scope:
    """The query's path, confined to the workspace and resolved to its real location.

    Args:
        path: "" for the root; relative to it, or absolute inside it.

    Raises:
        PermissionDenied: `..` above the root, an absolute path outside it, or a symlink
            on the way that points out of it (see Workspace.resolve).
        NotFound: nothing exists there.
        InvalidArgument: neither a directory nor a regular file, or a NUL byte.
    """
    if path in ("", "."):
        return Scope("", is_file=False)
    real = workspace.resolve(workspace.relative(path))
    relative = real.relative_to(workspace.root).as_posix()
    relative = "" if relative == "." else relative
    if real.is_dir():
        return Scope(relative, is_file=False)
    if real.is_file():
        return Scope(relative, is_file=True)
    if not os.path.lexists(real):
        raise NotFound(f"no file or directory {path!r} in the workspace")
    raise InvalidArgument(f"{path!r} is neither a directory nor a regular file")


@functools.lru_cache(maxsize=256)
def glob_spec(globs: tuple[str, ...]) -> pathspec.GitIgnoreSpec | None:
    """Globs as one gitignore-style matcher (None for none), as ripgrep's -g reads them: a
    glob without a slash matches a name at any depth, `dir/` a directory and all below it,
    `/x` only at the root, `**` any number of directories.

    Raises:
        InvalidArgument: a glob pathspec cannot parse.
    """
    lines = [g for g in globs if g.strip()]
    if not lines:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, TypeError) as exc:
        raise InvalidArgument(f"invalid glob in {list(globs)!r}: {exc}") from exc


def scoped_files(
    workspace: Workspace, scope: Scope, include: tuple[str, ...], exclude: tuple[str, ...]
) -> list[str]:
    """The files to search, in the listing's order (sorted by path components).

    A directory's files come from Workspace.listed_files() (git's, or a walk honouring
    every .gitignore; .git never); a file named by the scope is searched even if ignored or
    outside the globs, as ripgrep searches a file named on its command line. Include globs
    keep files matching any of them; exclude globs then drop files matching any (a file
    under an excluded directory included), both matched against the workspace-relative path.
    A leading `!` in an include glob makes it an exclude glob, as in ripgrep's -g.
    """
    if scope.is_file:
        return [scope.path]
    names = workspace.listed_files()
    if scope.path:
        prefix = scope.path + "/"
        names = [n for n in names if n.startswith(prefix)]
    negated = tuple(g[1:] for g in include if g.startswith("!"))
    wanted = glob_spec(tuple(g for g in include if not g.startswith("!")))
    unwanted = glob_spec(tuple(exclude) + negated)
    if wanted is not None:
        names = [n for n in names if wanted.match_file(n)]
    if unwanted is not None:
        names = [n for n in names if not unwanted.match_file(n)]
    return names
