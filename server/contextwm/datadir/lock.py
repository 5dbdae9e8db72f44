"""One server per data directory: an exclusive lock on its lock file while the server runs."""

from __future__ import annotations

import fcntl
import os
import time

from contextwm.datadir.layout import DataDir
from contextwm.own_session import starter_pid


class DataDirInUse(Exception):
    """Another process holds the data directory's lock; the message says which."""


class DataDirLock:
    """An exclusive flock on DIR/contextwm.lock, held from start-up to shutdown.

    A second server on the same directory would keep its own copy of every conversation's
    window and overwrite the first one's index files. The kernel drops the lock when the
    process ends, kill -9 included, so a crash never leaves a stale lock behind; the file
    itself stays (deleting it would race with the next server taking it) and holds the pid.
    """

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def take(cls, data: DataDir, *, wait: float = 2.0) -> DataDirLock:
        """Takes the lock, or raises DataDirInUse.

        Args:
            wait: how long to retry first, in seconds: a restart right after a kill can run
                before the killed server has finished exiting and let go.
        """
        fd = os.open(data.lock, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _pid_in(fd)
                    os.close(fd)
                    raise DataDirInUse(
                        f"{data.root} is in use by another contextwm process ({holder}, which"
                        f" holds {data.lock.name}). Two servers on one data directory would"
                        f" each keep their own copy of every conversation; stop the other one,"
                        f" or give this one another --data-dir."
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.write(fd, f"{starter_pid()}\n".encode())
        return cls(fd)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the file drops the lock
            self._fd = None


def holder(data: DataDir) -> str | None:
    """Who holds the directory's lock ("pid N"), or None when nobody does. Reads only: the
    lock file is neither created nor changed, and a free lock is not kept."""
    try:
        fd = os.open(data.lock, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _pid_in(fd)
    else:
        return None
    finally:
        os.close(fd)


def _pid_in(fd: int) -> str:
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return f"pid {text}" if text.isdigit() else "pid unknown"
