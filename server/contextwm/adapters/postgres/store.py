"""The shared Store: one PostgreSQL database that several replicas serve, postings cut by
FTS5's tokenizer for BM25, vectors as float32 bytes."""

from __future__ import annotations

from contextwm.adapters.postgres.checkpoints import CheckpointTables
from contextwm.adapters.postgres.claims import ClaimTables
from contextwm.adapters.postgres.conversations import ConversationTables
from contextwm.adapters.postgres.erasure import ErasureTables
from contextwm.adapters.postgres.events import EventTables
from contextwm.adapters.postgres.exclusive import ExclusiveWorkLocks
from contextwm.adapters.postgres.feed import EventFeedListener
from contextwm.adapters.postgres.history import HistoryTables
from contextwm.adapters.postgres.items import ItemTables
from contextwm.adapters.postgres.keys import KeyTables
from contextwm.adapters.postgres.lexical import LexicalTables
from contextwm.adapters.postgres.locks import ConversationLockTables
from contextwm.adapters.postgres.namespace import NamespaceTables
from contextwm.adapters.postgres.reembedding import ReembedTables
from contextwm.adapters.postgres.retention import RetentionTables
from contextwm.adapters.postgres.sessions import SessionTables
from contextwm.adapters.postgres.stats import StatsTables
from contextwm.adapters.postgres.transfer import TransferTables
from contextwm.adapters.postgres.vectors import VectorTables
from contextwm.ports.store import Store


class PostgresStore(
    ConversationTables,
    ConversationLockTables,
    ItemTables,
    VectorTables,
    ClaimTables,
    LexicalTables,
    NamespaceTables,
    HistoryTables,
    CheckpointTables,
    EventTables,
    EventFeedListener,
    StatsTables,
    RetentionTables,
    ErasureTables,
    ReembedTables,
    SessionTables,
    TransferTables,
    KeyTables,
    ExclusiveWorkLocks,
):
    """The Store port on one PostgreSQL database: each base owns the tables of one role port
    and shares the connection pool and transactions of Database, so that an append, its
    postings, facts, edits and events commit together."""


# Each base declares its own role port; here mypy proves that together they are the whole.
_WHOLE: type[Store] = PostgresStore
