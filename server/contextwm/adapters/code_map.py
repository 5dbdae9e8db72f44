"""The codebase map's parts: a .gitignore-honouring walk and a file tree fitted to tokens."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pathspec

from contextwm.domain.errors import ContextWMError
from contextwm.ports.tokens import TokenCounter

# The longest "... N more files" line the budget sets aside before the exact count.
_TRAILER_RESERVE = "\n... 99999 more files"


def walk_files(root: Path, read_text: Callable[[str], str]) -> list[str]:
    """Root-relative POSIX paths of the files not ignored by any .gitignore, .git skipped.

    The outside-git twin of `git ls-files --cached --others --exclude-standard`: nested
    .gitignore files apply below their directory, and an ignored directory is not entered
    (as in git, a file inside it cannot be re-included). Symlinked directories are listed as
    entries, not followed, as git does.

    Args:
        root: the real workspace root.
        read_text: reads a root-relative file, confined to the root (Workspace.read_text).
    """
    specs: dict[str, pathspec.GitIgnoreSpec] = {}
    names: list[str] = []
    for directory, dirs, files in os.walk(root):
        here = Path(directory).relative_to(root).as_posix()
        here = "" if here == "." else here
        if ".gitignore" in files:
            try:
                lines = read_text(f"{here}/.gitignore" if here else ".gitignore").splitlines()
                specs[here] = pathspec.GitIgnoreSpec.from_lines(lines)
            except ContextWMError:  # an escaping or oversized .gitignore is not ours to read
                pass
        links = [d for d in dirs if os.path.islink(os.path.join(directory, d))]
        dirs[:] = sorted(
            d
            for d in dirs
            if d != ".git" and d not in links and not _ignored(specs, here, d, is_dir=True)
        )
        names += [
            f"{here}/{f}" if here else f
            for f in [*files, *links]
            if not _ignored(specs, here, f, is_dir=False)
        ]
    return names


def _ignored(specs: dict[str, pathspec.GitIgnoreSpec], here: str, name: str, is_dir: bool) -> bool:
    """Git's rule: the deepest .gitignore with a matching pattern decides, its last match wins."""
    path = f"{here}/{name}" if here else name
    parts = here.split("/") if here else []
    for depth in range(len(parts), -1, -1):
        base = "/".join(parts[:depth])
        spec = specs.get(base)
        if spec is None:
            continue
        relative = path[len(base) + 1 :] if base else path
        # A trailing slash lets directory-only patterns (`build/`) match directories.
        result = spec.check_file(relative + "/" if is_dir else relative)
        if result.include is not None:
            return result.include
    return False


def render_map(
    files: Sequence[str],
    symbols_of: Callable[[str], tuple[str, ...]],
    counter: TokenCounter,
    max_tokens: int | None,
    max_files: int,
) -> str:
    """The tree of files, two spaces per level, `name/` for directories, symbols after `:`.

    Args:
        files: POSIX paths sorted by their components, so each directory's files are together.
        symbols_of: a file's top-level symbols (called for the listed files only).
        counter: measures max_tokens.
        max_tokens: when given, whole lines are dropped from the end until the text fits.
        max_files: files beyond this many are not listed.

    Returns:
        The map, its last line `... N more files` when files were left out; "" when not
        even that line fits.
    """
    lines: list[str] = []
    done: list[int] = []  # files fully listed once lines[: i + 1] are shown
    is_dir: list[bool] = []
    previous: list[str] = []
    for index, name in enumerate(files[:max_files]):
        parts = name.split("/")
        for depth, part in enumerate(parts[:-1]):
            if previous[: depth + 1] != parts[: depth + 1]:
                lines.append("  " * depth + part + "/")
                done.append(index)
                is_dir.append(True)
        symbols = symbols_of(name)
        label = parts[-1] + (": " + ", ".join(symbols) if symbols else "")
        lines.append("  " * (len(parts) - 1) + label)
        done.append(index + 1)
        is_dir.append(False)
        previous = parts

    def render(count: int) -> str:
        # Trailing directory lines without their files say nothing; drop them.
        while count and is_dir[count - 1]:
            count -= 1
        left = len(files) - (done[count - 1] if count else 0)
        return "\n".join(lines[:count] + ([f"... {left} more files"] if left else []))

    if max_tokens is None:
        return render(len(lines))
    # Per-line counts find the cut cheaply; the rendered text is then counted exactly, since
    # BPE may merge tokens across a newline and the sum is only an estimate.
    budget, count = max_tokens - counter.count(_TRAILER_RESERVE), 0
    for line in lines:
        cost = counter.count(line + "\n")
        if cost > budget:
            break
        budget -= cost
        count += 1
    while count >= 0:
        text = render(count)
        if counter.count(text) <= max_tokens:
            return text
        count -= 1
    return ""
