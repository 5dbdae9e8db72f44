"""A session of the server's own. Linux kernels with autogroup scheduling (the default of
most distributions) share CPU time between sessions first and between their threads after:
in a session of its own, the server keeps a fair share of the machine beside any number of
busy processes of one other session, where in theirs each busy process counts as much as
it does. Not the default: a session of its own also leaves the process group its starter
signals (a terminal's Ctrl-C, `timeout`), so it must then be stopped by its pid."""

from __future__ import annotations

import os


def enter_own_session() -> str:
    """Makes this process the leader of a new session when it can; returns what it did, for
    the log."""
    pid = os.getpid()
    setsid = getattr(os, "setsid", None)
    if setsid is None:
        return "own_session: sessions are not supported here; kept the starter's"
    if os.getsid(0) == pid:
        return "own_session: already leads its session"
    try:
        setsid()
    except PermissionError:
        # setsid refuses a process group's leader (a shell with job control made it one).
        return (
            "own_session: not possible, this process leads its process group; start it"
            " with `setsid contextwm serve ...` instead"
        )
    return f"own_session: leads session {pid}"
