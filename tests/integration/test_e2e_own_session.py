"""`contextwm serve` serves from a child leading a session of its own (where Linux shares CPU
time between sessions first), while the process that was started stays in its starter's
process group: a group's Ctrl-C and a SIGTERM to it stop the server cleanly, and kill -9 of
it ends the server at once. `--no-own-session` keeps one process in the starter's session."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from contextwm_client import Client
from server_process import ServerProcess

HASHING = ("--embedder", "hashing")


def children(server: ServerProcess) -> list[int]:
    pid = server.proc.pid
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def serving_child(server: ServerProcess) -> int:
    (child,) = children(server)
    return child


def ended(pid: int, timeout: float = 60.0) -> bool:
    """Whether pid is gone (or a zombie nobody has reaped yet) within timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_the_server_leads_a_session_of_its_own_and_stops_on_sigterm(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "own", *HASHING, "--log-level", "debug")
    try:
        child = serving_child(server)
        assert os.getsid(child) == child
        assert os.getsid(server.proc.pid) == os.getsid(0)  # the started pid stays put
        with Client(server.target) as client:
            client.append("c", "The deploy window is Tuesday.")
            ctx = client.get_context("c", "When is the deploy window?", max_tokens=200)
            assert "The deploy window is Tuesday." in [s.content for s in ctx.recent]
        # The data directory names the pid that was started: the one to signal.
        assert (tmp_path / "own" / "contextwm.lock").read_text().strip() == str(server.proc.pid)
    finally:
        assert server.terminate() == 0
    assert ended(child)
    log = server.log()
    assert f"own_session: leads session {child}; pid {server.proc.pid} passes signals on" in log
    assert "shutting down: draining calls in flight" in log


def test_ctrl_c_to_the_starters_process_group_stops_the_server_cleanly(tmp_path: Path) -> None:
    # A group of its own stands for a terminal's foreground job (the test's is pytest's).
    server = ServerProcess(tmp_path / "group", *HASHING, process_group=0)
    child = serving_child(server)
    os.killpg(server.proc.pid, signal.SIGINT)
    assert server.proc.wait(60) == 0
    assert ended(child)
    assert "shutting down: draining calls in flight" in server.log()


def test_kill_9_of_the_started_pid_ends_the_server(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "killed", *HASHING)
    child = serving_child(server)
    server.kill()
    assert ended(child)
    restarted = ServerProcess(tmp_path / "killed", *HASHING)  # the data directory is free
    assert restarted.terminate() == 0


def test_no_own_session_keeps_one_process_in_the_starters_session(tmp_path: Path) -> None:
    server = ServerProcess(
        tmp_path / "shared", *HASHING, "--no-own-session", "--log-level", "debug"
    )
    try:
        assert os.getsid(server.proc.pid) == os.getsid(0)
        assert children(server) == []
    finally:
        assert server.terminate() == 0
    assert "own_session:" not in server.log()
