"""Workspace trees for tests: files written from a dict, git run in them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def write(root: Path, files: dict[str, str | bytes]) -> None:
    """Writes each file below root (directories made as needed); bytes are written as is."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def git(root: Path, *args: str) -> str:
    """git in root (commit signing off); its stdout. Raises CalledProcessError on failure."""
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "commit.gpgsign=false", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout
