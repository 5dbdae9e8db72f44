"""Short crash runs (scripts/crash_test.py): a few SIGKILLs of a server under eight writers,
start-up included; nothing acknowledged is lost or duplicated, invariants hold. Then the same
over two replicas on PostgreSQL, which is itself crashed and started again once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "crash_test.py"
# Few kills, short uptimes, one check without the clean restart: the suite's share.
SHORT = [
    "--kills",
    "3",
    "--max-uptime",
    "2",
    "--final-seconds",
    "1",
    "--search-sample",
    "3",
    "--no-restart-check",
]


def crash_run(*args: str, env: dict[str, str] | None = None) -> str:
    """Runs the script in a subprocess of its own (it spawns writer processes and servers);
    its report, asserted to say PASS. The report is the failure message. env: more
    environment for the servers."""
    run = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        timeout=280,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-4000:]
    assert "PASS" in run.stdout
    return run.stdout


def test_a_short_crash_run_passes(tmp_path: Path) -> None:
    report = crash_run(*SHORT, "--pause", "0.1", "--work-dir", str(tmp_path / "crash"))
    assert "kills          3:" in report


def test_a_short_crash_run_of_two_replicas_on_postgresql_passes(tmp_path: Path) -> None:
    # Writers slower than above: a replica serves them while the other restarts, and the
    # checks wait for every item to be embedded.
    report = crash_run(
        *SHORT,
        "--postgresql",
        "--replicas",
        "2",
        "--db-restarts",
        "1",
        "--pause",
        "0.5",
        "--work-dir",
        str(tmp_path / "crash"),
        # Replicas embed in-process: a start loads the model once, not twice, which halves
        # the five starts this run spends most of its time on (the SQLite run above and the
        # long runs keep the indexer's child process).
        env={"CONTEXTWM_INDEXER_PROCESS": "false"},
    )
    assert "kills          3:" in report
    assert "db restarts    1:" in report
    assert "none restarted" in report
    assert "checked        " in report and "through replica 1" in report
