"""The start-up guard: a store file that is not a sound contextwm store is refused, read-only,
before anything writes to it."""

from __future__ import annotations

import logging
import sqlite3
import time
import urllib.parse
from pathlib import Path

from contextwm.adapters.sqlite.schema import SCHEMA_VERSION

log = logging.getLogger(__name__)

_RESTORE = (
    "Restore the file from a backup (with its -wal file, if there is one), or move it aside to"
    " start with an empty store; `contextwm check DIR` lists what is wrong."
    " contextwm does not start on it, so that nothing is written into a damaged store."
)


class UnusableStore(Exception):
    """The store file must not be served as it is. The message is one paragraph for an
    operator: the file, what is wrong with it, and what to do."""


def read_only(path: Path) -> sqlite3.Connection:
    """A connection that cannot write, for a file no server has open.

    With a -wal file beside it (a server was killed), SQLite reads the committed transactions
    in it, and may create the -shm index, which holds no data. Without one (nor a rollback
    journal) the database file is the whole store, and is opened immutable: nothing at all is
    created beside it.
    """
    journals = (path.with_name(path.name + suffix) for suffix in ("-wal", "-journal"))
    mode = "mode=ro" if any(j.exists() for j in journals) else "immutable=1"
    uri = f"file:{urllib.parse.quote(str(path.resolve()))}?{mode}"
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def verify_store_file(path: Path, *, scan: bool = True) -> None:
    """Raises UnusableStore unless path is a new store (no file yet) or a sound contextwm
    store of this version or an older one. scan=False leaves out the quick_check, for a
    caller that runs the full integrity_check itself.

    sqlite3.connect accepts any file and SQLite reports damage only when a query reads it, so
    a damaged file would otherwise surface later, in the middle of serving, after writes
    into it. PRAGMA quick_check reads every page once (0.12 s warm, 0.5 s cold for a store of
    100k items, 270 MB; about a tenth of start-up with the model); the full integrity_check,
    which also matches every index entry against its row, is left to `contextwm check`.
    """
    wal = path.with_name(path.name + "-wal")
    if not path.exists() and not path.is_symlink():
        if wal.exists():
            raise UnusableStore(
                f"{path} is missing, but its write-ahead log {wal.name} is there: the database"
                f" was moved or deleted without it. {_RESTORE}"
            )
        return  # a new store
    if path.is_dir():
        raise UnusableStore(
            f"{path} is a directory, where contextwm's SQLite file should be. Move it aside,"
            f" then restore the file from a backup or start with an empty store."
        )
    if not path.is_file():
        raise UnusableStore(f"{path} is not a regular file (a dangling link?). {_RESTORE}")
    if path.stat().st_size == 0:
        raise UnusableStore(
            f"{path} is empty (0 bytes), which a store never is once created: its data was"
            f" lost, perhaps by a failed copy or restore. Restore it from a backup; if this"
            f" is a new data directory, delete the empty file."
        )
    started = time.perf_counter()
    try:
        db = read_only(path)
    except sqlite3.Error as exc:
        raise UnusableStore(
            f"{path} cannot be opened ({exc}); check that this user may read and write it"
            f" and its directory."
        ) from exc
    try:
        _verify(path, db, scan)
    finally:
        db.close()
    if scan:
        log.info("store %s checked in %.2f s", path, time.perf_counter() - started)


def _verify(path: Path, db: sqlite3.Connection, scan: bool) -> None:
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:  # "file is not a database": the header is gone
        raise UnusableStore(
            f"{path} is not a readable SQLite database ({exc}). {_RESTORE}"
        ) from exc
    if tables and "meta" not in tables:
        raise UnusableStore(
            f"{path} is a SQLite database, but not a contextwm store (it has no meta table)."
            f" Point --data-dir at contextwm's data directory, or move the file aside."
        )
    try:
        report = [r[0] for r in db.execute("PRAGMA quick_check(5)")] if scan else ["ok"]
        row = (
            db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if tables
            else None
        )
    except sqlite3.DatabaseError as exc:  # "database disk image is malformed"
        report = [str(exc)]
    if report != ["ok"]:
        raise UnusableStore(f"{path} is damaged: SQLite reports {'; '.join(report)}. {_RESTORE}")
    if row is not None and str(row[0]).isdigit() and int(row[0]) > SCHEMA_VERSION:
        raise UnusableStore(
            f"{path} has schema version {row[0]}, newer than this contextwm's"
            f" ({SCHEMA_VERSION}): it was written by a newer contextwm. Upgrade contextwm."
        )
