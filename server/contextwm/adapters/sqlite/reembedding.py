"""Re-embedding: the conversations whose vectors come from another model, their items still
without a vector of the new one, and the switch to it."""

from __future__ import annotations

from contextwm.adapters.sqlite.database import Database
from contextwm.ports.reembed_store import ReembedStore, StaleConversation
from contextwm.ports.vector_store import PendingVector


class ReembedTables(Database, ReembedStore):
    """Re-embedding: the conversations whose vectors come from another model, their items
    still without a vector of the new one, and the switch to it."""

    def stale_conversations(self, model: str, namespace: str | None) -> list[StaleConversation]:
        where, params = "embed_model != ?", [model]
        if namespace is not None:
            where += " AND namespace = ?"
            params.append(namespace)
        rows = (
            self._reader()
            .execute(
                "SELECT id, namespace, conversation_id, embed_model FROM conversations"
                f" WHERE {where} ORDER BY namespace, conversation_id",
                params,
            )
            .fetchall()
        )
        return [StaleConversation(r[0], r[1], r[2], r[3]) for r in rows]

    def unembedded_items(
        self, key: int, model: str, after_seq: int, limit: int
    ) -> list[PendingVector]:
        # Along the (conv, seq) index from after_seq: a caller walking the conversation
        # never rescans the items it has embedded.
        rows = (
            self._reader()
            .execute(
                "SELECT i.id, i.conv, i.seq, i.content FROM items i"
                " LEFT JOIN vectors v ON v.item = i.id AND v.model = ?"
                " WHERE i.conv = ? AND i.seq > ? AND v.item IS NULL ORDER BY i.seq LIMIT ?",
                (model, key, after_seq, limit),
            )
            .fetchall()
        )
        return [PendingVector(r[0], r[1], r[2], r[3]) for r in rows]

    def finish_reembed(self, key: int, model: str) -> int:
        with self._transaction(changes=key) as db:
            dropped = db.execute(
                "DELETE FROM vectors WHERE model != ?"
                " AND item IN (SELECT id FROM items WHERE conv = ?)",
                (model, key),
            ).rowcount
            db.execute("UPDATE conversations SET embed_model = ? WHERE id = ?", (model, key))
        return int(dropped)
