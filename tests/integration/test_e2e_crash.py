"""A short crash run (scripts/crash_test.py): a few SIGKILLs of a server under eight writers,
start-up included; nothing acknowledged is lost or duplicated, invariants hold."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "crash_test.py"


def test_a_short_crash_run_passes(tmp_path: Path) -> None:
    # A subprocess of its own: the script spawns writer processes and servers, and its
    # report is the failure message.
    run = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--kills",
            "3",
            "--max-uptime",
            "2",
            "--final-seconds",
            "1",
            "--search-sample",
            "3",
            "--no-restart-check",
            "--pause",
            "0.1",
            "--work-dir",
            str(tmp_path / "crash"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=280,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-4000:]
    assert "PASS" in run.stdout
    assert "kills          3:" in run.stdout
