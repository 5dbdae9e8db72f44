"""`contextwm check DIR`: checks a data directory offline and prints what is wrong with it."""

from __future__ import annotations

import argparse
import logging
import sys

from contextwm.datadir.checkup import check_data_dir
from contextwm.datadir.layout import DataDir
from contextwm.datadir.lock import holder

HEALTHY = 0
UNHEALTHY = 1  # problems found: the report lists them
NOT_CHECKED = 2  # no data directory there, or a server runs on it


def run_check(args: argparse.Namespace) -> int:
    """Checks args.data_dir (a Path) and prints the report; args.verbose lists every
    conversation. Returns HEALTHY, UNHEALTHY or NOT_CHECKED."""
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)
    data = DataDir(args.data_dir)
    if not data.root.is_dir():
        print(f"error: {data.root} is not a directory", file=sys.stderr)
        return NOT_CHECKED
    if not any(p.exists() or p.is_symlink() for p in (data.store, data.indexes)):
        print(f"error: {data.root} holds no contextwm store ({data.store.name})", file=sys.stderr)
        return NOT_CHECKED
    # Offline only: a running server changes the store and the index files while they are
    # read, and holds in memory what it has not written yet.
    running = holder(data)
    if running is not None:
        print(
            f"error: a contextwm server ({running}) is running on {data.root}; stop it first:"
            " `contextwm check` reads a data directory no server has open",
            file=sys.stderr,
        )
        return NOT_CHECKED
    report = check_data_dir(data, verbose=args.verbose)
    print(report.render())
    return HEALTHY if report.healthy else UNHEALTHY
