"""The whole store: every role port in one, for the engine that holds it and hands out its
slices, and for the adapters that implement it."""

from __future__ import annotations

from typing import Protocol

from contextwm.ports.checkpoint_store import CheckpointStore
from contextwm.ports.conversation_locks import ConversationLocks
from contextwm.ports.conversation_store import ConversationStore
from contextwm.ports.conversation_transfer import ConversationTransfer
from contextwm.ports.erasure_store import ErasureStore
from contextwm.ports.event_feed import EventFeed
from contextwm.ports.event_store import EventStore
from contextwm.ports.exclusive_work import ExclusiveWork
from contextwm.ports.history_store import HistoryStore
from contextwm.ports.item_store import ItemStore
from contextwm.ports.key_store import KeyStore
from contextwm.ports.lexical_store import LexicalStore
from contextwm.ports.namespace_store import NamespaceStore
from contextwm.ports.reembed_store import ReembedStore
from contextwm.ports.retention_store import RetentionStore
from contextwm.ports.session_store import SessionStore
from contextwm.ports.stats_store import StatsStore
from contextwm.ports.store_lifecycle import StoreLifecycle
from contextwm.ports.vector_claims import VectorClaims
from contextwm.ports.vector_store import VectorStore


class Store(
    ConversationStore,
    ConversationLocks,
    ItemStore,
    VectorStore,
    VectorClaims,
    LexicalStore,
    NamespaceStore,
    HistoryStore,
    CheckpointStore,
    EventStore,
    EventFeed,
    StatsStore,
    RetentionStore,
    ErasureStore,
    ReembedStore,
    SessionStore,
    ConversationTransfer,
    KeyStore,
    ExclusiveWork,
    StoreLifecycle,
    Protocol,
):
    """Everything here is durable once the call returns. Safe to call from several threads.

    A feature asks for the roles it uses (one port, or a small Protocol of two or three),
    never for this whole; tests/unit/test_architecture.py keeps it so."""
