"""The name a server on a data directory claims work under in a store shared with other
servers: kept in the directory, so that a server restarted on it (after a kill, say) knows
the claims its predecessor left and can free them at once rather than after their lease."""

from __future__ import annotations

import os
import secrets
import socket

from contextwm.datadir.layout import DataDir


def replica_name(data: DataDir) -> str:
    """This data directory's replica name, made on first use. Only one server at a time runs
    on a directory (its lock), so no two live servers share a name."""
    path = data.replica_name
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    name = f"{socket.gethostname()}:{secrets.token_hex(8)}"
    partial = path.with_name(path.name + ".partial")
    partial.write_text(name + "\n")
    os.replace(partial, path)
    return name
