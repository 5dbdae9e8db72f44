"""What the store holds, counted: items and tokens by state, vectors, index bytes, item times,
per conversation and for a whole scope."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StateStats:
    """The items in one state and their summed token counts."""

    items: int = 0
    tokens: int = 0


@dataclass(frozen=True, slots=True)
class StoreStats:
    """What the store holds for a conversation or a scope."""

    window: StateStats = StateStats()
    archived: StateStats = StateStats()
    compacted: StateStats = StateStats()
    reverted: StateStats = StateStats()
    vectors: int = 0  # items with a vector of the current model
    oldest: float | None = None  # item timestamps; None without items
    newest: float | None = None
    index_bytes: int = 0  # the saved index files on disk

    @property
    def states(self) -> tuple[StateStats, ...]:
        return (self.window, self.archived, self.compacted, self.reverted)

    @property
    def items(self) -> int:
        return sum(s.items for s in self.states)

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.states)

    @property
    def missing_vectors(self) -> int:
        """Items still waiting for a vector of the current model."""
        return self.items - self.vectors


@dataclass(frozen=True, slots=True)
class ConversationStats:
    key: int  # the store's key, which names the conversation's index file
    namespace: str
    conversation_id: str
    stats: StoreStats


@dataclass(frozen=True, slots=True)
class ScopeStats:
    """What the store answers for a scope, from one snapshot of it."""

    conversations: tuple[ConversationStats, ...]  # the page asked for, in order
    total: StoreStats  # every conversation of the scope (index bytes left at 0)
    keys: tuple[int, ...]  # the keys of every conversation of the scope
