"""The in-memory state of one live conversation: window, clock, index, pending embeddings,
and the agent loop's active context, fact ledger and file copies."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from contextwm.domain.active import Replacement
from contextwm.domain.conversations import ConversationState, WindowStats
from contextwm.domain.usage import Models, Reported, Usage
from contextwm.llm_context.active_context import ActiveContext
from contextwm.llm_context.ledger import Ledger
from contextwm.llm_context.usage import measure
from contextwm.ports.conversation_store import ConversationRecord
from contextwm.ports.lexical_store import TermPostings
from contextwm.ports.vector_index import VectorIndex
from contextwm.window.scoring import Clock
from contextwm.window.window import Window


@dataclass(slots=True)
class ConversationRuntime:
    """Guarded by `lock`, which every reader and writer of the fields below holds.

    Lock order: a runtime's lock before the store's write lock, never the other way round.
    """

    record: ConversationRecord
    window: Window
    token_limit: int
    state: ConversationState
    last_seq: int
    first_ts: float | None
    last_ts: float | None
    pending: int
    # Counted here rather than in the store: GetConversation is polled by UIs and scripts,
    # and a COUNT over a large conversation on every poll takes CPU from the embedder.
    total: int
    archived: int
    tokens: int  # summed token counts of every item: BM25's mean item length
    lock: threading.RLock
    indexed: threading.Condition
    active: ActiveContext
    ledger: Ledger
    # The agent loop, loaded from the store: where the active context starts (the last
    # compaction marker), live compactions, the provider's last report, the last event.
    active_start: int = 0
    compactions: int = 0
    reported: Reported | None = None
    last_event: int = 0
    last_edit: int = 0
    # Per path, the newest item holding the whole file; a newer copy supersedes it.
    whole_copies: Mapping[str, int] = field(default_factory=dict)
    # Superseded file copies (any state): shown as their notice in every context.
    replaced: dict[int, Replacement] = field(default_factory=dict)
    # Whether any item is reverted: then a vector arriving for an item outside the window
    # needs its state looked up (a reverted item stays out of the index).
    has_reverted: bool = False
    index: VectorIndex | None = None
    index_dirty: bool = False
    deleted: bool = False
    # The store's version of the conversation that memory reflects: another server sharing
    # the store moves it, and the runtime is then reloaded before use.
    version: int = 0
    # Dropped from memory while idle (Runtimes.unload_idle), or after the store failed to
    # reload it (Runtimes.reload): a new runtime serves it.
    unloaded: bool = False
    # time.monotonic() of the last lookup: what unloading goes by.
    last_used: float = 0.0
    # time.monotonic() of the last search of the index: saving waits until it has rested.
    last_search: float = 0.0
    # Terms' postings read lately, with the item total and last seq when they were read:
    # reading them costs more than the rest of a search, and the feedback round weighs the
    # same words of the best hits query after query (see retrieval.ranker).
    term_postings: dict[str, tuple[TermPostings, int, int]] = field(default_factory=dict)

    @property
    def key(self) -> int:
        return self.record.key

    def clock(self) -> Clock:
        return Clock(now=self.last_ts if self.last_ts is not None else 0.0, last_seq=self.last_seq)

    def stats(self) -> WindowStats:
        return WindowStats(
            item_count=len(self.window),
            token_count=self.window.tokens,
            token_limit=self.token_limit,
            item_limit=self.record.settings.window_max_items,
        )

    def usage(self, models: Models) -> Usage:
        """The usage figure now, against the models table (lock held)."""
        return measure(
            self.record.settings,
            models,
            self.active.totals(),
            self.reported,
            compactions=self.compactions,
            compactable=self.active.row_count() > (1 if self.active_start else 0),
        )
