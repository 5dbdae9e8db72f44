"""One server per data directory: the lock, who holds it, and that it goes with its holder."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from contextwm.datadir.layout import DataDir
from contextwm.datadir.lock import DataDirInUse, DataDirLock, holder


def test_a_held_directory_is_refused_until_released(tmp_path: Path) -> None:
    data = DataDir(tmp_path)
    assert holder(data) is None and not data.lock.exists()  # looking creates nothing
    lock = DataDirLock.take(data)
    assert holder(data) == f"pid {os.getpid()}"
    with pytest.raises(
        DataDirInUse, match=f"in use by another contextwm process \\(pid {os.getpid()}"
    ):
        DataDirLock.take(data, wait=0)
    lock.release()
    lock.release()  # twice is fine
    assert holder(data) is None
    DataDirLock.take(data).release()


def test_taking_waits_a_little_for_a_holder_on_its_way_out(tmp_path: Path) -> None:
    data = DataDir(tmp_path)
    lock = DataDirLock.take(data)
    started = time.monotonic()  # before the timer starts, so it is 0.3 s on at least
    threading.Timer(0.3, lock.release).start()
    DataDirLock.take(data, wait=60).release()
    # Taken once let go, not at the end of its wait (a busy machine may be slow to let go).
    assert 0.2 < time.monotonic() - started < 30


def test_the_lock_goes_with_a_killed_process(tmp_path: Path) -> None:
    code = (
        "import os, sys; from pathlib import Path\n"
        "from contextwm.datadir.layout import DataDir\n"
        "from contextwm.datadir.lock import DataDirLock\n"
        f"DataDirLock.take(DataDir(Path({str(tmp_path)!r})))\n"
        "print('held', flush=True); sys.stdin.read()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        assert holder(DataDir(tmp_path)) == f"pid {child.pid}"
    finally:
        child.kill()
        child.wait(30)
    assert holder(DataDir(tmp_path)) is None
    DataDirLock.take(DataDir(tmp_path)).release()
