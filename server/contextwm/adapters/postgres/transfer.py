"""A conversation copied out whole from one snapshot, or written in whole in one
transaction, its postings derived again from its items."""

from __future__ import annotations

import psycopg

from contextwm.adapters.postgres.codecs import text_in, text_out
from contextwm.adapters.postgres.database import Database, copy_rows
from contextwm.adapters.postgres.lexical import item_terms
from contextwm.adapters.postgres.vectors import write_vectors
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
    """Dumps read every table inside one REPEATABLE READ transaction."""

    def dump_conversation(self, key: int, vectors: bool = False) -> ConversationDump | None:
        with self._snapshot() as db:
            row = db.execute(
                f"SELECT namespace, conversation_id, {', '.join(CONVERSATION.columns)}"
                " FROM conversations WHERE id = %s",
                (key,),
            ).fetchone()
            if row is None:
                return None
            tables = {
                t.name: [
                    decoded(t, r, text_out)
                    for r in db.execute(select_sql(t, "id", "%s"), (key,)).fetchall()
                ]
                for t in TABLES
            }
            stored = (
                [
                    StoredVector(seq, model, bytes(vec))
                    for seq, model, vec in db.execute(
                        "SELECT i.seq, v.model, v.vec FROM items i JOIN vectors v"
                        " ON v.item = i.id WHERE i.conv = %s ORDER BY i.seq",
                        (key,),
                    ).fetchall()
                ]
                if vectors
                else None
            )
        return ConversationDump(row[0], row[1], decoded(CONVERSATION, row[2:]), tables, stored)

    def load_conversation(self, dump: ConversationDump) -> int:
        check_dump(dump)
        columns = ("namespace", "conversation_id", *CONVERSATION.columns)
        with self._transaction() as db:
            try:
                with db.transaction():  # a savepoint: the refusal is the only error expected
                    row = db.execute(
                        f"INSERT INTO conversations ({', '.join(columns)})"
                        f" VALUES ({', '.join(['%s'] * len(columns))}) RETURNING id",
                        (
                            dump.namespace,
                            dump.conversation_id,
                            *encoded(CONVERSATION, dump.conversation),
                        ),
                    ).fetchone()
            except psycopg.errors.UniqueViolation:
                raise AlreadyExists(
                    f"conversation {dump.conversation_id!r} already exists in namespace"
                    f" {dump.namespace!r}"
                ) from None
            assert row is not None
            key: int = row[0]
            for table in TABLES:
                copy_rows(
                    db,
                    f"{table.name} (conv, {', '.join(table.columns)})",
                    [(key, *encoded(table, r, text_in)) for r in dump.tables.get(table.name, ())],
                )
            _write_postings(db, key, dump.tables.get("items", []))
            for model, (seqs, vectors) in vectors_by_model(dump).items():
                write_vectors(db, model, [(key, seq) for seq in seqs], vectors)
        return key


def _write_postings(db: psycopg.Connection, key: int, items: list[dict[str, object]]) -> None:
    """The postings of the loaded items, cut as appends cut them."""
    terms = item_terms([str(i["content"]) for i in items])
    db.execute(
        "INSERT INTO postings (conv, term, item) SELECT %s, p.term, i.id"
        " FROM unnest(%s::bigint[], %s::text[]) AS p (seq, term)"
        " JOIN items i ON i.conv = %s AND i.seq = p.seq",
        (
            key,
            [i["seq"] for i, held in zip(items, terms, strict=True) for _ in held],
            [term for held in terms for term in held],
            key,
        ),
    )
