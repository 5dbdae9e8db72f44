"""The PostgreSQL store: one database that several replicas share. Each base owns the tables
of one role port and shares the pool and transactions of Database.

Being built: it becomes the whole Store (as SqliteStore is) once every role has its class
here."""

from __future__ import annotations

from contextwm.adapters.postgres.checkpoints import CheckpointTables
from contextwm.adapters.postgres.conversations import ConversationTables
from contextwm.adapters.postgres.events import EventTables
from contextwm.adapters.postgres.history import HistoryTables
from contextwm.adapters.postgres.items import ItemTables
from contextwm.adapters.postgres.lexical import LexicalTables
from contextwm.adapters.postgres.namespace import NamespaceTables
from contextwm.adapters.postgres.sessions import SessionTables
from contextwm.adapters.postgres.stats import StatsTables
from contextwm.adapters.postgres.vectors import VectorTables


class PostgresStore(
    ConversationTables,
    ItemTables,
    VectorTables,
    LexicalTables,
    NamespaceTables,
    HistoryTables,
    CheckpointTables,
    EventTables,
    StatsTables,
    SessionTables,
):
    """The roles PostgreSQL serves so far, on one connection pool."""
