"""Formatting, lint and strict typing are part of the suite, so CI enforces them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [["ruff", "format", "--check", "."], ["ruff", "check", "."], ["mypy"]],
    ids=["ruff-format", "ruff-check", "mypy"],
)
def test_static_check(command: list[str]) -> None:
    out = subprocess.run(
        [str(BIN / command[0]), *command[1:]], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
