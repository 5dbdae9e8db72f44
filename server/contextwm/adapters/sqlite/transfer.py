"""A conversation copied out whole from one read snapshot, or written in whole in one
transaction."""

from __future__ import annotations

import sqlite3

from contextwm.adapters.sqlite.database import Database, insert_rows
from contextwm.adapters.sqlite.vectors import write_vectors
from contextwm.adapters.transfer_rows import (
    CONVERSATION,
    TABLES,
    check_dump,
    decoded,
    encoded,
    select_sql,
    vectors_by_model,
)
from contextwm.domain.errors import AlreadyExists
from contextwm.ports.conversation_transfer import (
    ConversationDump,
    ConversationTransfer,
    StoredVector,
)


class TransferTables(Database, ConversationTransfer):
    """Dumps read every table inside one read transaction: WAL gives it one snapshot."""

    def dump_conversation(self, key: int, vectors: bool = False) -> ConversationDump | None:
        db = self._reader()
        db.execute("BEGIN")
        try:
            row = db.execute(
                f"SELECT namespace, conversation_id, {', '.join(CONVERSATION.columns)}"
                " FROM conversations WHERE id = ?",
                (key,),
            ).fetchone()
            if row is None:
                return None
            tables = {
                t.name: [decoded(t, r) for r in db.execute(select_sql(t, "rowid", "?"), (key,))]
                for t in TABLES
            }
            stored = (
                [
                    StoredVector(seq, model, bytes(vec))
                    for seq, model, vec in db.execute(
                        "SELECT i.seq, v.model, v.vec FROM items i JOIN vectors v"
                        " ON v.item = i.id WHERE i.conv = ? ORDER BY i.seq",
                        (key,),
                    )
                ]
                if vectors
                else None
            )
        finally:
            db.execute("COMMIT")
        return ConversationDump(row[0], row[1], decoded(CONVERSATION, row[2:]), tables, stored)

    def load_conversation(self, dump: ConversationDump) -> int:
        check_dump(dump)
        with self._transaction() as db:
            columns = ("namespace", "conversation_id", *CONVERSATION.columns)
            try:
                cur = db.execute(
                    f"INSERT INTO conversations ({', '.join(columns)})"
                    f" VALUES ({', '.join('?' * len(columns))})",
                    (
                        dump.namespace,
                        dump.conversation_id,
                        *encoded(CONVERSATION, dump.conversation),
                    ),
                )
            except sqlite3.IntegrityError:
                raise AlreadyExists(
                    f"conversation {dump.conversation_id!r} already exists in namespace"
                    f" {dump.namespace!r}"
                ) from None
            key = cur.lastrowid
            assert key is not None
            for table in TABLES:
                insert_rows(
                    db,
                    f"{table.name} (conv, {', '.join(table.columns)})",
                    [(key, *encoded(table, r)) for r in dump.tables.get(table.name, ())],
                )
            for model, (seqs, vectors) in vectors_by_model(dump).items():
                write_vectors(db, model, [(key, seq) for seq in seqs], vectors)
        return key
