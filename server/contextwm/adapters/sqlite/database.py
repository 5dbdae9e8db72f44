"""Connections to the store's SQLite file: one writer behind a lock, a reader per thread,
transactions, and the schema migration."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from contextwm.adapters.item_memo import ItemMemo
from contextwm.adapters.sqlite.schema import (
    FTS_TRIGGER,
    SCHEMA,
    SCHEMA_VERSION,
    V2_COLUMNS,
    V2_TABLES,
    V3_COLUMNS,
    V4_COLUMNS,
    V4_FILL,
    V5_TABLES,
)
from contextwm.ports.store_lifecycle import StoreLifecycle

# The fewest bound parameters a SQLite build allows per statement (older builds: 999).
MAX_PARAMETERS = 999


def insert_rows(db: sqlite3.Connection, into: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """INSERT INTO `into` (a table and its column list) these rows, as many per statement as
    the parameter limit allows rather than one statement per row (executemany): every
    sqlite3 call releases and re-takes the interpreter lock, which under concurrent appends
    is a switch to another thread and back per call."""
    if not rows:
        return
    width = len(rows[0])
    per_statement = MAX_PARAMETERS // width
    marks = "(" + ", ".join("?" * width) + ")"
    for start in range(0, len(rows), per_statement):
        chunk = rows[start : start + per_statement]
        db.execute(
            f"INSERT INTO {into} VALUES {', '.join([marks] * len(chunk))}",
            [value for row in chunk for value in row],
        )


WAL_SIZE_LIMIT = 64 * 1024 * 1024


class Database(StoreLifecycle):
    """The connections every table group of the store shares.

    One write connection behind a lock (SQLite has one writer anyway); reads use a
    connection per thread, which WAL lets run beside the writer. synchronous=NORMAL in WAL
    mode survives a killed process (the point of the kill -9 test); "FULL" also survives
    power loss at the cost of an fsync per commit.
    """

    def __init__(self, path: Path, *, synchronous: str = "NORMAL") -> None:
        if synchronous not in {"NORMAL", "FULL"}:
            raise ValueError(f"synchronous must be NORMAL or FULL, got {synchronous!r}")
        self._path = path
        self._synchronous = synchronous
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._writer = self._connect()
        # Checkpoints copy the WAL into the database file and fsync it: done by maintain() on
        # a background thread, not by whichever append happens to cross the WAL size limit.
        self._writer.execute("PRAGMA wal_autocheckpoint=0")
        with self._write_lock:
            self._migrate()
            self._writer.execute(FTS_TRIGGER)
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._memo = ItemMemo()

    def _migrate(self) -> None:
        """Creates a new file at SCHEMA_VERSION or brings an older one up to it, in one
        transaction (a crash half-way leaves the old version, which is migrated again)."""
        db = self._writer
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"{self._path} has schema version {version}, newer than this contextwm"
                    f" ({SCHEMA_VERSION}); upgrade contextwm"
                )
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            for table, column in (*V2_COLUMNS, *V3_COLUMNS, *V4_COLUMNS):
                present = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
                if column.split()[0] not in present:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
            for statement in V2_TABLES.split(";"):
                if statement.strip():
                    db.execute(statement)
            if version < 4:
                db.execute(V4_FILL)
            db.execute(V5_TABLES)
            db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self._synchronous}")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=10000")
        # Freed cells and pages are overwritten with zeros, so that a deleted item's text
        # (an erasure's, a retention's) does not stay readable in the file's free space.
        # It costs a write of the freed bytes, which deletions alone make.
        conn.execute("PRAGMA secure_delete=ON")
        # A checkpointed WAL is reused from its start but never shrinks by itself: after a
        # burst of appends it is truncated back to this size.
        conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
        return conn

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    @contextmanager
    def _transaction(self, *, changes: int | None = None) -> Iterator[sqlite3.Connection]:
        """A write transaction; changes: the key of a conversation whose archived or
        compacted items it may change or delete (the memo forgets them once committed)."""
        try:
            with self._write_lock:
                self._writer.execute("BEGIN IMMEDIATE")
                try:
                    yield self._writer
                except BaseException:
                    self._writer.execute("ROLLBACK")
                    raise
                self._writer.execute("COMMIT")
        finally:
            if changes is not None:
                self._memo.forget(changes)

    def maintain(self) -> None:
        """Moves committed WAL pages into the database file without blocking writers."""
        self._reader().execute("PRAGMA wal_checkpoint(PASSIVE)")

    def reachable(self) -> bool:
        return True  # a file of this process

    def close(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        with self._write_lock:
            self._writer.close()
