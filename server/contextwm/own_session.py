"""A session of the server's own. Linux kernels with autogroup scheduling (the default of
most distributions) share CPU time between sessions first and between their threads after:
in a session of its own, the server keeps a fair share of the machine beside any number of
busy processes of its starter's session (the agent it serves, a test run), where in theirs
each busy process counts as much as it does.

A process cannot lead a new session and stay in its starter's process group, which is what a
terminal's Ctrl-C, `timeout` and a supervisor's group kill reach. So the server forks: the
child leads a new session and serves; the parent stays where it was started, passes SIGINT,
SIGTERM and SIGHUP on to the child (SIGHUP as SIGTERM: a closed terminal stops it cleanly),
and exits with the child's status. Killed outright, the parent takes the child with it (the
kernel's parent-death signal), so `kill -9` of the pid that was started still stops the
server at once, as a crash."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
# What the parent passes on, and as what.
RELAYED = {
    signal.SIGINT: signal.SIGINT,
    signal.SIGTERM: signal.SIGTERM,
    signal.SIGHUP: signal.SIGTERM,
}

_starter: int | None = None  # the parent's pid, in a child that leads its own session


def starter_pid() -> int:
    """The pid the server was started as: the one to signal, and to name to people."""
    return _starter or os.getpid()


def enter_own_session() -> int | None:
    """Moves the serving to a child that leads a new session, where this is Linux and the
    process does not lead one already; logs what it did.

    Returns None in the process that goes on serving, and in the parent, once the child
    has ended, the exit status to end with. Call it before any thread or child process
    starts: only the calling thread is forked."""
    log = logging.getLogger(__name__)
    if not sys.platform.startswith("linux"):
        log.debug("own_session: only on Linux; kept the starter's session")
        return None
    if os.getsid(0) == os.getpid():
        log.debug("own_session: already leads its session")
        return None
    parent = os.getpid()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # or the child would write what the parent had buffered again
    child = os.fork()
    if child:
        return _relay_until_exit(child)
    _die_with(parent)
    os.setsid()
    global _starter
    _starter = parent
    log.debug("own_session: leads session %d; pid %d passes signals on", os.getpid(), parent)
    return None


def _die_with(parent: int) -> None:
    """Has the kernel SIGKILL this process when its parent ends (so a parent killed while
    forking is caught too)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:
        os._exit(1)


def _relay_until_exit(child: int) -> int:
    """Passes the relayed signals on to the child until it ends; returns its exit status as
    a shell gives it (128 + the signal that ended it)."""

    def relay(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):  # it has just ended: waitpid returns
            os.kill(child, RELAYED[signal.Signals(signum)])

    for sig in RELAYED:
        signal.signal(sig, relay)
    _, status = os.waitpid(child, 0)  # retried after each relay (PEP 475)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code
