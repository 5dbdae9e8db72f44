"""`contextwm reembed` against a real server: a progress line and a summary, exit status 1 on
a failed call and 2 on a bad scope, and Ctrl-C stops it cleanly (130) so that a re-run
resumes where it stopped."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import StartService
from contextwm.app import Service
from contextwm.cli import main
from contextwm.ports.embedder import Embedder
from contextwm_client import Client
from stale_conversations import (
    ITEMS,
    QUERY,
    STALE,
    WatchedEmbedder,
    vector_models,
    write_stale_data,
)

BATCH = 8
# The CLI as a terminal starts it, with Ctrl-C at its default. A child inherits ignored
# signals, and C's system() ignores SIGINT and SIGQUIT process-wide while it runs: a child
# started by this worker while one of its threads was in system() once ignored Ctrl-C.
CLI = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler);"
    " from contextwm.cli import main; sys.exit(main(sys.argv[1:]))"
)


def exit_code(process: subprocess.Popen[str], stderr: queue.Queue[str], timeout: float) -> int:
    """The process's exit status within timeout; else a failure showing its signal state and
    every thread's stack (Python's faulthandler prints them on SIGABRT)."""
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        status = Path(f"/proc/{process.pid}/status").read_text().splitlines()
        process.send_signal(signal.SIGABRT)
        process.wait(30)
        printed = "".join(stderr.queue)[-8000:]
        pytest.fail(
            f"still running {timeout:.0f} s after SIGINT;"
            f" {[row for row in status if row.startswith(('State', 'Sig'))]}; stderr:\n{printed}"
        )


@pytest.fixture
def data_dir(tmp_path: Path, start_service: StartService) -> Path:
    """A data directory whose conversations all hold vectors of the hashing model."""
    path = tmp_path / "stale"
    write_stale_data(start_service, path)
    return path


@pytest.fixture
def watched(embedder: Embedder) -> WatchedEmbedder:
    return WatchedEmbedder(embedder, "in default/b)")


@pytest.fixture
def service(data_dir: Path, start_service: StartService, watched: WatchedEmbedder) -> Service:
    """A server with the bundled model on that data."""
    return start_service(data_dir=data_dir, indexer_batch_size=BATCH, model=watched)


def test_reembed_prints_progress_and_a_summary(
    service: Service, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address = f"127.0.0.1:{service.port}"
    assert main(["--target", address, "reembed", "nosuch"]) == 1
    assert "error: NOT_FOUND" in capsys.readouterr().err
    assert main(["--target", address, "reembed", "a", "--all"]) == 2
    assert "not both" in capsys.readouterr().err

    assert main(["--target", address, "reembed", "--namespace", "ops", "d"]) == 0
    out, err = capsys.readouterr()
    # Not a terminal here: a line per report, the plan first.
    lines = err.splitlines()
    assert lines[0].endswith(f"0/1 conversations, 0/{ITEMS} items (0.0 items/s)")
    assert f"1/1 conversations, {ITEMS}/{ITEMS} items" in lines[-1]
    assert out.startswith(f"re-embedded 1 conversation ({ITEMS} items) with all-MiniLM-L6-v2")

    assert main(["--target", address, "reembed"]) == 0  # the default namespace
    out, _ = capsys.readouterr()
    assert out.startswith(f"re-embedded 3 conversations ({3 * ITEMS} items)")
    assert main(["--target", address, "--namespace", "default", "reembed", "--all"]) == 0
    out, _ = capsys.readouterr()
    assert out.strip() == "nothing to re-embed: every conversation of every namespace uses" + (
        " all-MiniLM-L6-v2"
    )
    assert vector_models(data_dir, service.settings.store).keys() == {"all-MiniLM-L6-v2"}
    with Client(address) as client:
        for namespace, cid in STALE:
            client.search(QUERY, conversation_id=cid, mode="dense", namespace=namespace)


def test_ctrl_c_stops_the_reembed_and_a_rerun_resumes(
    service: Service,
    data_dir: Path,
    watched: WatchedEmbedder,
    capsys: pytest.CaptureFixture[str],
) -> None:
    address = f"127.0.0.1:{service.port}"
    command = [sys.executable, "-c", CLI, "--target", address, "reembed", "--all"]
    lines: queue.Queue[str] = queue.Queue()
    # "a" gets done; the run then holds a batch of "b" it cannot store while the test holds
    # b's lock, and Ctrl-C comes.
    with service.engine.holding("default", "b"):
        process = subprocess.Popen(
            command,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        )
        stderr = process.stderr
        assert stderr is not None
        reader = threading.Thread(target=lambda: [*map(lines.put, stderr)])
        reader.start()
        while " 1/4 conversations" not in (line := lines.get(timeout=120)):
            assert "conversations" in line, line
        assert watched.seen.wait(60)
        process.send_signal(signal.SIGINT)
        assert exit_code(process, lines, 60) == 130
    reader.join(60)
    rest = [lines.get() for _ in range(lines.qsize())]
    assert rest[-1].startswith("interrupted after "), rest
    assert rest[-1].rstrip().endswith("run the command again to resume: what was embedded is kept")

    # The re-run goes on from there: "a" is not done again.
    assert main(["--target", address, "reembed", "--all"]) == 0
    out, err = capsys.readouterr()
    first, *_, last = err.splitlines()
    assert re.match(r"re-embedding with all-MiniLM-L6-v2: 0/3 conversations, 0/\d+ items", first)
    assert "3/3 conversations" in last and ", ops/d" in last
    assert out.startswith("re-embedded 3 conversations")
    # The batch of "b" in hand when it was cancelled was kept.
    assert re.search(r"; \d+ items embedded by an earlier run kept$", out.strip()), out
    assert vector_models(data_dir, service.settings.store) == {
        "all-MiniLM-L6-v2": len(STALE) * ITEMS
    }
