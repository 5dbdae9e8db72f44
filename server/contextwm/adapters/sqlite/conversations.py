"""Conversations: created, found, listed, their settings changed, deleted, counted."""

from __future__ import annotations

import sqlite3

from contextwm.adapters.sqlite.database import Database
from contextwm.adapters.store_rows import CONVERSATION_COLUMNS, record_of, settings_to_json
from contextwm.domain.conversations import ConversationSettings
from contextwm.domain.errors import AlreadyExists
from contextwm.domain.items import ItemState
from contextwm.ports.conversation_store import ConversationRecord, ConversationStore, ItemCounts


class ConversationTables(Database, ConversationStore):
    """Conversations: created, found, listed, their settings changed, deleted, counted."""

    def create_conversation(
        self, namespace: str, conversation_id: str, settings: ConversationSettings, now: float
    ) -> ConversationRecord:
        with self._transaction() as db:
            try:
                cur = db.execute(
                    "INSERT INTO conversations (namespace, conversation_id, settings, created_at)"
                    " VALUES (?, ?, ?, ?)",
                    (namespace, conversation_id, settings_to_json(settings), now),
                )
            except sqlite3.IntegrityError:
                raise AlreadyExists(
                    f"conversation {conversation_id!r} already exists in namespace {namespace!r}"
                ) from None
            key = cur.lastrowid
        assert key is not None
        return ConversationRecord(
            key, namespace, conversation_id, settings, now, 0, None, "general"
        )

    def get_conversation(self, namespace: str, conversation_id: str) -> ConversationRecord | None:
        row = (
            self._reader()
            .execute(
                f"SELECT {CONVERSATION_COLUMNS} FROM conversations"
                " WHERE namespace = ? AND conversation_id = ?",
                (namespace, conversation_id),
            )
            .fetchone()
        )
        return record_of(row) if row else None

    def conversation_record(self, key: int) -> ConversationRecord | None:
        row = (
            self._reader()
            .execute(
                f"SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = ?",
                (key,),
            )
            .fetchone()
        )
        return record_of(row) if row else None

    def list_conversations(
        self, namespace: str, after: str, limit: int
    ) -> list[ConversationRecord]:
        rows = (
            self._reader()
            .execute(
                f"SELECT {CONVERSATION_COLUMNS} FROM conversations"
                " WHERE namespace = ? AND conversation_id > ? ORDER BY conversation_id LIMIT ?",
                (namespace, after, limit),
            )
            .fetchall()
        )
        return [record_of(r) for r in rows]

    def conversation_keys(self, namespace: str) -> list[tuple[int, str]]:
        rows = (
            self._reader()
            .execute(
                "SELECT id, conversation_id FROM conversations WHERE namespace = ?", (namespace,)
            )
            .fetchall()
        )
        return [(r[0], r[1]) for r in rows]

    def update_settings(self, key: int, settings: ConversationSettings, token_limit: int) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE conversations SET settings = ?, token_limit = ? WHERE id = ?",
                (settings_to_json(settings), token_limit, key),
            )

    def delete_conversation(self, key: int) -> int:
        with self._transaction(changes=key) as db:
            rows = db.execute("SELECT id, content FROM items WHERE conv = ?", (key,)).fetchall()
            # A contentless FTS5 table forgets a row only when told its original values.
            db.executemany(
                "INSERT INTO items_fts (items_fts, rowid, content, tag) VALUES ('delete', ?, ?, ?)",
                [(r[0], r[1], f"c{key}") for r in rows],
            )
            db.execute("DELETE FROM conversations WHERE id = ?", (key,))
        return len(rows)

    def counts(self, key: int, model: str) -> ItemCounts:
        db = self._reader()
        total, archived, reverted, tokens = db.execute(
            "SELECT count(*), coalesce(sum(state IN (?, ?)), 0), coalesce(sum(state = ?), 0),"
            " coalesce(sum(tokens), 0) FROM items WHERE conv = ?",
            (int(ItemState.ARCHIVED), int(ItemState.COMPACTED), int(ItemState.REVERTED), key),
        ).fetchone()
        embedded = db.execute(
            "SELECT count(*) FROM items i JOIN vectors v ON v.item = i.id"
            " WHERE i.conv = ? AND v.model = ?",
            (key, model),
        ).fetchone()[0]
        return ItemCounts(
            total=total,
            archived=archived,
            pending_vectors=total - embedded,
            reverted=reverted,
            tokens=tokens,
        )

    def clock_bounds(self, key: int) -> tuple[float | None, float | None]:
        """Timestamps of the conversation's oldest and newest items."""
        row = (
            self._reader()
            .execute("SELECT min(ts), max(ts) FROM items WHERE conv = ?", (key,))
            .fetchone()
        )
        return row[0], row[1]
