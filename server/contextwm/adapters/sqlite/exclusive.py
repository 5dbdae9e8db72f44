"""One server per SQLite file: background work is always this server's to do."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from contextwm.adapters.sqlite.database import Database
from contextwm.ports.exclusive_work import ExclusiveWork


class ExclusiveWorkAlone(Database, ExclusiveWork):
    """Yields True: no other server shares the file."""

    @contextmanager
    def exclusively(self, name: str) -> Iterator[bool]:
        yield True
