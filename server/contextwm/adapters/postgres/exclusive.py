"""Background work done by one server at a time: an advisory lock per kind of work, held on a
connection of the pool while the work runs (PostgreSQL drops it with the connection, so a
server that dies leaves the work to the others)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from contextwm.adapters.postgres.database import Database
from contextwm.ports.exclusive_work import ExclusiveWork

# The advisory lock space of background work, beside MIGRATION_LOCK.
WORK_LOCKS = 0x63776D33  # "cwm3"


class ExclusiveWorkLocks(Database, ExclusiveWork):
    """Advisory locks named by the work."""

    @contextmanager
    def exclusively(self, name: str) -> Iterator[bool]:
        with self._reachable(), self._pool.connection(self._wait_seconds) as conn:
            row = conn.execute(
                "SELECT pg_try_advisory_lock(%s, hashtext(%s))", (WORK_LOCKS, name)
            ).fetchone()
            mine = bool(row and row[0])
            try:
                yield mine
            finally:
                if mine and not conn.closed:
                    conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (WORK_LOCKS, name))
