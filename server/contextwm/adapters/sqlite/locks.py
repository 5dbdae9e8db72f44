"""One server per SQLite file (the data directory's lock): there are no other servers to hold
a conversation against, so versions never move."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from contextwm.adapters.sqlite.database import Database
from contextwm.ports.conversation_locks import ConversationLocks, Held


class ConversationLockTables(Database, ConversationLocks):
    """Holds nothing; every version is 0."""

    @contextmanager
    def hold(self, key: int) -> Iterator[Held]:
        yield Held(0)

    def version(self, key: int) -> int | None:
        return 0
