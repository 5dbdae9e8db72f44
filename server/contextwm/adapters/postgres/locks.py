"""Holding a conversation against other servers: its row locked (FOR UPDATE) for one
transaction that every write of the hold joins, and a version that moves with each hold that
wrote, which tells every server whether its memory of the conversation is current."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from contextwm.adapters.postgres.database import Database
from contextwm.ports.conversation_locks import ConversationLocks, Held


class ConversationLockTables(Database, ConversationLocks):
    """Conversation holds on the conversations table's rows."""

    @contextmanager
    def hold(self, key: int) -> Iterator[Held]:
        holding = self._holding
        if getattr(holding, "conn", None) is not None:
            if holding.key != key:
                raise RuntimeError(f"holding conversation {holding.key}, not {key}")
            yield holding.held
            return
        with (
            self._reachable(),
            self._pool.connection(self._wait_seconds) as conn,
            conn.transaction(),
        ):
            row = conn.execute(
                "SELECT version FROM conversations WHERE id = %s FOR UPDATE", (key,)
            ).fetchone()
            held = Held(None if row is None else int(row[0]))
            holding.conn, holding.key, holding.held, holding.wrote = conn, key, held, False
            try:
                yield held
                if holding.wrote and row is not None:
                    moved = conn.execute(
                        "UPDATE conversations SET version = version + 1 WHERE id = %s"
                        " RETURNING version",
                        (key,),
                    ).fetchone()
                    held.version = None if moved is None else int(moved[0])
            finally:
                holding.conn = holding.held = None

    def version(self, key: int) -> int | None:
        with self._read() as db:
            row = db.execute("SELECT version FROM conversations WHERE id = %s", (key,)).fetchone()
        return None if row is None else int(row[0])
