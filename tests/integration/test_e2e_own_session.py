"""`contextwm serve --own-session`: the server leads a session of its own (where Linux shares
CPU time between sessions first), and still stops cleanly on SIGTERM; without it, it stays
in its starter's session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from server_process import ServerProcess

HASHING = ("--embedder", "hashing")


@pytest.mark.skipif(not hasattr(os, "setsid"), reason="sessions are POSIX")
def test_own_session_makes_the_server_lead_a_session_of_its_own(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "own", *HASHING, "--own-session")
    try:
        assert os.getsid(server.proc.pid) == server.proc.pid
        assert os.getpgid(server.proc.pid) == server.proc.pid
    finally:
        assert server.terminate() == 0
    assert f"own_session: leads session {server.proc.pid}" in server.log()


def test_by_default_the_server_stays_in_its_starters_session(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "shared", *HASHING)
    try:
        assert os.getsid(server.proc.pid) == os.getsid(0)
    finally:
        assert server.terminate() == 0
    assert "own_session" not in server.log()
