"""What the agent loop's calls work with, taken once from the engine that builds them."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from contextwm.conversations.appends import Appends
from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.runtimes import Runtimes
from contextwm.conversations.unit_of_work import Change
from contextwm.conversations.validation import Limits
from contextwm.conversations.vectors import Vectors
from contextwm.domain.usage import Models
from contextwm.ports.checkpoint_store import CheckpointStore
from contextwm.ports.event_store import EventStore
from contextwm.ports.history_store import HistoryStore
from contextwm.ports.item_store import ItemStore
from contextwm.ports.tokens import TokenCounter


class LoopStore(ItemStore, HistoryStore, CheckpointStore, EventStore, Protocol):
    """The store as the agent loop uses it: items, their history, checkpoints and events."""


@dataclass(frozen=True, slots=True)
class LoopParts:
    store: LoopStore
    runtimes: Runtimes
    change: Callable[[str, str], AbstractContextManager[Change]]  # a unit of work by name
    appends: Appends
    vectors: Vectors
    counters: Callable[[str], TokenCounter]
    models: Models
    limits: Limits
    clock: Callable[[], float]

    @classmethod
    def of(cls, engine: ContextEngine) -> LoopParts:
        return cls(
            store=engine.store,
            runtimes=engine.runtimes,
            change=engine.change,
            appends=engine.appends,
            vectors=engine.vectors,
            counters=engine.counters,
            models=engine.models,
            limits=engine.limits,
            clock=engine.clock,
        )
