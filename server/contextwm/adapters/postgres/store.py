"""The PostgreSQL store: one database that several replicas share. Each base owns the tables
of one role port and shares the pool and transactions of Database.

Being built: the conversation, event and session roles so far; it becomes the whole Store
(as SqliteStore is) once every role has its class here."""

from __future__ import annotations

from contextwm.adapters.postgres.conversations import ConversationTables
from contextwm.adapters.postgres.events import EventTables
from contextwm.adapters.postgres.sessions import SessionTables


class PostgresStore(ConversationTables, EventTables, SessionTables):
    """The roles PostgreSQL serves so far, on one connection pool."""
