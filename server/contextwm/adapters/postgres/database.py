"""Connections to the PostgreSQL store: a pool shared by a replica's threads, transactions,
and the schema migration, which one replica at a time performs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from contextwm.adapters.postgres.schema import MIGRATIONS, SCHEMA_VERSION
from contextwm.domain.errors import Unavailable
from contextwm.ports.store_lifecycle import StoreLifecycle

# The advisory lock replicas take to migrate: the others wait, then find the work done.
MIGRATION_LOCK = 0x63776D31  # "cwm1"
# How long the readiness probe waits for the database: to connect (libpq counts whole
# seconds, at least 2), and for sent data to be acknowledged (a host gone silent).
PROBE_CONNECT_SECONDS = 2
PROBE_TCP_MS = 2000


def copy_rows(db: psycopg.Connection, into: str, rows: Sequence[Sequence[Any]]) -> None:
    """Writes rows into `into` (a table and its column list) with COPY: one round trip for
    any number of rows."""
    if not rows:
        return
    with db.cursor() as cur, cur.copy(f"COPY {into} FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


class StoreUnavailable(Exception):
    """The database cannot be reached (or refused the connection); the message says which
    and how it was tried."""


class Database(StoreLifecycle):
    """The connections every table group of the PostgreSQL store shares.

    Connections are in autocommit mode; `_transaction` opens a transaction on one of them,
    so a write that spans tables commits or rolls back as one.
    """

    def __init__(
        self,
        dsn: str,
        *,
        pool_size: int = 8,
        connect_seconds: float = 10.0,
        wait_seconds: float = 3.0,
    ) -> None:
        """Connects and brings the schema up to SCHEMA_VERSION. A call waits up to
        wait_seconds for a connection (all busy, or the database unreachable), then fails
        Unavailable.

        Raises:
            StoreUnavailable: no connection within connect_seconds.
            RuntimeError: the database's schema is newer than this contextwm's.
        """
        self._dsn = dsn
        self._where = _safe(dsn)
        # Called first by close(), while the pool still serves (threads that read the store).
        self._closing: list[Callable[[], None]] = []
        self._wait_seconds = wait_seconds
        self._was_unreachable = False
        # The readiness probe's own connection (see reachable), opened on first use.
        self._probe: psycopg.Connection | None = None
        # The connection of the conversation this thread holds (see locks.py), which its
        # reads and writes use meanwhile.
        self._holding = threading.local()
        self._pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            timeout=connect_seconds,
            # Reconnecting gives up this soon (its back-off doubles each time), and the next
            # call tries afresh: once the database is back, calls work within seconds rather
            # than after a back-off grown through the outage.
            reconnect_timeout=wait_seconds,
            open=False,
            name="contextwm",
        )
        try:
            self._pool.open(wait=True, timeout=connect_seconds)
        except PoolTimeout as exc:
            self._pool.close()
            raise StoreUnavailable(
                f"cannot connect to PostgreSQL at {_safe(dsn)} within {connect_seconds:g} s:"
                " is it running, and do the host, port, user and database name match?"
            ) from exc
        try:
            self._migrate()
        except BaseException:
            self._pool.close()
            raise

    @contextmanager
    def _read(self) -> Iterator[psycopg.Connection]:
        held: psycopg.Connection | None = getattr(self._holding, "conn", None)
        if held is not None:
            with self._reachable():
                yield held
            return
        with self._reachable(), self._pool.connection(self._wait_seconds) as conn:
            yield conn

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection]:
        """A transaction of its own, or while this thread holds a conversation the hold's
        transaction, which commits with it. No savepoint there (two round trips while the
        conversation's row is held): a write that fails fails the whole hold, which rolls
        back."""
        held: psycopg.Connection | None = getattr(self._holding, "conn", None)
        if held is not None:
            with self._reachable():
                self._holding.wrote = True
                yield held
            return
        with (
            self._reachable(),
            self._pool.connection(self._wait_seconds) as conn,
            conn.transaction(),
        ):
            yield conn

    @contextmanager
    def _reachable(self) -> Iterator[None]:
        """Turns a lost or refused connection into Unavailable: the call may be retried, and
        the pool reconnects by itself once the database is back. A transaction cut off this
        way was rolled back, or committed if the commit had reached the database: an append
        retried with its idempotency key is then answered from what was stored."""
        try:
            yield
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise Unavailable(
                f"the PostgreSQL store at {self._where} cannot be reached ({first_line(exc)});"
                " retry the call"
            ) from exc

    @contextmanager
    def _snapshot(self) -> Iterator[psycopg.Connection]:
        """A connection inside one read-only REPEATABLE READ transaction: every query sees
        the store as it was at the first, so figures read by several queries agree while
        writers go on."""
        with (
            self._reachable(),
            self._pool.connection(self._wait_seconds) as conn,
            conn.transaction(),
        ):
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield conn

    def _migrate(self) -> None:
        """Creates the schema in an empty database or brings an older one up to
        SCHEMA_VERSION, in one transaction, with other replicas held off meanwhile."""
        with self._transaction() as db:
            db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            db.execute(
                "CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value text NOT NULL)"
            )
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0]) if row else 0
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"the PostgreSQL store has schema version {version}, newer than this"
                    f" contextwm ({SCHEMA_VERSION}); upgrade contextwm"
                )
            for step in MIGRATIONS[version:]:
                db.execute(step)
            db.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', %s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )

    def maintain(self) -> None:
        """Nothing to do: PostgreSQL's autovacuum keeps the tables in shape."""

    def reachable(self) -> bool:
        """Asks the database, on a connection of its own: under load every pooled one may be
        busy, and waiting for one (wait_seconds) would delay the answer by that much when
        the database stops. Once it answers again after not answering, the pool drops the
        connections that died meanwhile, so that calls get live ones. (Checking each
        connection as it is handed out would cost a round trip on every call.) Called by
        one thread, the readiness probe."""
        try:
            if self._probe is None or self._probe.closed:
                self._probe = psycopg.connect(
                    self._dsn,
                    autocommit=True,
                    connect_timeout=PROBE_CONNECT_SECONDS,
                    tcp_user_timeout=PROBE_TCP_MS,
                    application_name="contextwm readiness probe",
                )
            self._probe.execute("SELECT 1")
        except psycopg.OperationalError:
            self._close_probe()
            self._was_unreachable = True
            return False
        if self._was_unreachable:
            self._was_unreachable = False
            self._pool.check()
        return True

    def _close_probe(self) -> None:
        probe, self._probe = self._probe, None
        if probe is not None:
            probe.close()

    def close(self) -> None:
        for stop in self._closing:
            stop()
        self._closing.clear()
        self._close_probe()
        self._pool.close()


def first_line(exc: Exception) -> str:
    """The first line of an error's message (psycopg's run to several), for one-line logs."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _safe(dsn: str) -> str:
    """The DSN without its password, for messages."""
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    info.pop("password", None)
    return " ".join(f"{k}={v}" for k, v in info.items() if v is not None)
