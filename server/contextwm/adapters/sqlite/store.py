"""The embedded Store: one SQLite file in WAL mode, FTS5 postings for BM25, vectors as
float32 blobs."""

from __future__ import annotations

from contextwm.adapters.sqlite.checkpoints import CheckpointTables
from contextwm.adapters.sqlite.claims import ClaimTables
from contextwm.adapters.sqlite.conversations import ConversationTables
from contextwm.adapters.sqlite.erasure import ErasureTables
from contextwm.adapters.sqlite.events import EventTables
from contextwm.adapters.sqlite.exclusive import ExclusiveWorkAlone
from contextwm.adapters.sqlite.feed import NoEventFeed
from contextwm.adapters.sqlite.history import HistoryTables
from contextwm.adapters.sqlite.items import ItemTables
from contextwm.adapters.sqlite.keys import KeyTables
from contextwm.adapters.sqlite.lexical import LexicalIndex
from contextwm.adapters.sqlite.locks import ConversationLockTables
from contextwm.adapters.sqlite.namespace import NamespaceTables
from contextwm.adapters.sqlite.reembedding import ReembedTables
from contextwm.adapters.sqlite.retention import RetentionTables
from contextwm.adapters.sqlite.sessions import SessionTables
from contextwm.adapters.sqlite.stats import StatsTables
from contextwm.adapters.sqlite.transfer import TransferTables
from contextwm.adapters.sqlite.vectors import VectorTables
from contextwm.ports.store import Store


class SqliteStore(
    ConversationTables,
    ConversationLockTables,
    ItemTables,
    VectorTables,
    ClaimTables,
    LexicalIndex,
    NamespaceTables,
    HistoryTables,
    CheckpointTables,
    EventTables,
    NoEventFeed,
    StatsTables,
    RetentionTables,
    ErasureTables,
    ReembedTables,
    SessionTables,
    TransferTables,
    KeyTables,
    ExclusiveWorkAlone,
):
    """The Store port on one SQLite file: each base owns the tables of one role port and
    shares the connections and transactions of Database, so that an append, its facts, edits
    and events commit together."""


# Each base declares its own role port; here mypy proves that together they are the whole.
_WHOLE: type[Store] = SqliteStore
