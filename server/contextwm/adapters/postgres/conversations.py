"""Conversations: created, found, listed, their settings changed, deleted, counted."""

from __future__ import annotations

import psycopg

from contextwm.adapters.postgres.database import Database
from contextwm.adapters.postgres.events import ERASURE_CHANNEL
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
        try:
            with self._transaction() as db:
                row = db.execute(
                    "INSERT INTO conversations (namespace, conversation_id, settings, created_at)"
                    " VALUES (%s, %s, %s, %s) RETURNING id",
                    (namespace, conversation_id, settings_to_json(settings), now),
                ).fetchone()
        except psycopg.errors.UniqueViolation:
            raise AlreadyExists(
                f"conversation {conversation_id!r} already exists in namespace {namespace!r}"
            ) from None
        assert row is not None
        return ConversationRecord(
            row[0], namespace, conversation_id, settings, now, 0, None, "general"
        )

    def get_conversation(self, namespace: str, conversation_id: str) -> ConversationRecord | None:
        with self._read() as db:
            row = db.execute(
                f"SELECT {CONVERSATION_COLUMNS} FROM conversations"
                " WHERE namespace = %s AND conversation_id = %s",
                (namespace, conversation_id),
            ).fetchone()
        return record_of(row) if row else None

    def conversation_record(self, key: int) -> ConversationRecord | None:
        with self._read() as db:
            row = db.execute(
                f"SELECT {CONVERSATION_COLUMNS} FROM conversations WHERE id = %s", (key,)
            ).fetchone()
        return record_of(row) if row else None

    def list_conversations(
        self, namespace: str, after: str, limit: int
    ) -> list[ConversationRecord]:
        with self._read() as db:
            rows = db.execute(
                f"SELECT {CONVERSATION_COLUMNS} FROM conversations"
                " WHERE namespace = %s AND conversation_id > %s ORDER BY conversation_id"
                " LIMIT %s",
                (namespace, after, limit),
            ).fetchall()
        return [record_of(r) for r in rows]

    def conversation_keys(self, namespace: str) -> list[tuple[int, str]]:
        with self._read() as db:
            rows = db.execute(
                "SELECT id, conversation_id FROM conversations WHERE namespace = %s",
                (namespace,),
            ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def update_settings(self, key: int, settings: ConversationSettings, token_limit: int) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE conversations SET settings = %s, token_limit = %s WHERE id = %s",
                (settings_to_json(settings), token_limit, key),
            )

    def delete_conversation(self, key: int) -> int:
        with self._transaction() as db:
            # The items (and their vectors) go with it: ON DELETE CASCADE.
            row = db.execute("SELECT count(*) FROM items WHERE conv = %s", (key,)).fetchone()
            db.execute("DELETE FROM conversations WHERE id = %s", (key,))
            # Delivered when this commits: the other servers drop the conversation's index
            # file and their memory of its vectors (see feed.py).
            db.execute("SELECT pg_notify(%s, %s)", (ERASURE_CHANNEL, str(key)))
        assert row is not None
        return int(row[0])

    def counts(self, key: int, model: str) -> ItemCounts:
        with self._read() as db:
            row = db.execute(
                "SELECT count(*), count(*) FILTER (WHERE state IN (%s, %s)),"
                " count(*) FILTER (WHERE state = %s), coalesce(sum(tokens), 0)"
                " FROM items WHERE conv = %s",
                (int(ItemState.ARCHIVED), int(ItemState.COMPACTED), int(ItemState.REVERTED), key),
            ).fetchone()
            embedded = db.execute(
                "SELECT count(*) FROM items i JOIN vectors v ON v.item = i.id"
                " WHERE i.conv = %s AND v.model = %s",
                (key, model),
            ).fetchone()
        assert row is not None and embedded is not None
        total, archived, reverted, tokens = (int(v) for v in row)
        return ItemCounts(
            total=total,
            archived=archived,
            pending_vectors=total - int(embedded[0]),
            reverted=reverted,
            tokens=tokens,
        )

    def clock_bounds(self, key: int) -> tuple[float | None, float | None]:
        """Timestamps of the conversation's oldest and newest items."""
        with self._read() as db:
            row = db.execute(
                "SELECT min(ts), max(ts) FROM items WHERE conv = %s", (key,)
            ).fetchone()
        assert row is not None
        return row[0], row[1]
