"""The agent loop's calls: usage, the active context, compaction, truncation, checkpoints,
the context history and event watching, on the engine's conversations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextwm.agent_loop import checkpoints, compaction, truncation
from contextwm.agent_loop.checkpoints import RestoreOutcome
from contextwm.agent_loop.compaction import CompactOutcome, usage_now
from contextwm.agent_loop.parts import LoopParts
from contextwm.agent_loop.truncation import TruncateOutcome
from contextwm.agent_loop.watch import Watch
from contextwm.conversations.engine import ContextEngine
from contextwm.conversations.validation import page_size_of, page_token_seq
from contextwm.domain.active import ActiveRow
from contextwm.domain.checks import check_range
from contextwm.domain.errors import InvalidArgument, ResourceExhausted
from contextwm.domain.history import Checkpoint, CompactionRecord, ContextEdit
from contextwm.domain.items import Item, ItemState
from contextwm.domain.usage import MAX_REPORTED_TOKENS, Reported, Usage

__all__ = [
    "ActivePage",
    "ActiveView",
    "AgentLoop",
    "CompactOutcome",
    "RestoreOutcome",
    "TruncateOutcome",
    "Watch",
]


@dataclass(frozen=True, slots=True)
class ActiveView:
    """A row of the active context with its stored item (None for a truncation notice)."""

    row: ActiveRow
    item: Item | None


@dataclass(frozen=True, slots=True)
class ActivePage:
    views: tuple[ActiveView, ...]
    next_page_token: str
    total_rows: int
    usage: Usage


class AgentLoop:
    """Thread-safe: every call holds its conversation's lock, and every change is one unit
    of work (see conversations.unit_of_work)."""

    def __init__(self, engine: ContextEngine) -> None:
        # The engine is where the parts are built; the loop keeps only those it uses.
        self.parts = LoopParts.of(engine)
        self.events = engine.events
        self._list_items = engine.list_items

    def usage(
        self, namespace: str, conversation_id: str, reported: tuple[int, int] | None = None
    ) -> Usage:
        """The usage figure, with the summary request when should_compact is set.

        Args:
            reported: the provider's count of its last request (input tokens, cache-read
                input tokens), kept until the active context shrinks.
        """
        if reported is not None:
            # Bounded far above any model's context so that sums stay within int64.
            check_range("reported.input_tokens", reported[0], 0, MAX_REPORTED_TOKENS)
            check_range("reported.cache_read_input_tokens", reported[1], 0, MAX_REPORTED_TOKENS)
        with self.parts.change(namespace, conversation_id) as change:
            rt = change.rt
            if reported is not None:
                report = Reported(sum(reported), rt.active.totals().tokens)
                change.commit(lambda _: self.parts.store.set_reported(rt.key, report))
                rt.reported = report
            return usage_now(self.parts, rt, with_request=True)

    def active_context(
        self, namespace: str, conversation_id: str, page_size: int, page_token: str
    ) -> ActivePage:
        """One page of the active context, rows in order, with their stored items."""
        size = page_size_of(page_size, self.parts.limits)
        start = page_token_seq(page_token)
        runtimes = self.parts.runtimes
        with runtimes.holding(runtimes.get(namespace, conversation_id)) as rt:
            total = rt.active.row_count()
            rows = rt.active.rows(start, start + size)
            items = self.parts.store.get_items(rt.key, [r.seq for r in rows if r.seq is not None])
            views = tuple(
                ActiveView(r, items.get(r.seq) if r.seq is not None else None) for r in rows
            )
            more = start + size < total
            usage = usage_now(self.parts, rt)
            return ActivePage(views, str(start + size) if more else "", total, usage)

    def compact(self, namespace: str, conversation_id: str, summary: str | None) -> CompactOutcome:
        """See compaction.compact."""
        return compaction.compact(self.parts, namespace, conversation_id, summary)

    def truncate(self, namespace: str, conversation_id: str, strategy: str) -> TruncateOutcome:
        """See truncation.truncate."""
        return truncation.truncate(self.parts, namespace, conversation_id, strategy)

    def create_checkpoint(self, namespace: str, conversation_id: str, name: str) -> Checkpoint:
        """See checkpoints.create_checkpoint."""
        return checkpoints.create_checkpoint(self.parts, namespace, conversation_id, name)

    def list_checkpoints(self, namespace: str, conversation_id: str) -> list[Checkpoint]:
        rt = self.parts.runtimes.get(namespace, conversation_id)
        return self.parts.store.checkpoints(rt.key)

    def restore_checkpoint(self, namespace: str, conversation_id: str, name: str) -> RestoreOutcome:
        """See checkpoints.restore_checkpoint."""
        return checkpoints.restore_checkpoint(self.parts, namespace, conversation_id, name)

    def list_edits(
        self, namespace: str, conversation_id: str, page_size: int, page_token: str
    ) -> tuple[list[ContextEdit], str]:
        size = page_size_of(page_size, self.parts.limits)
        after = page_token_seq(page_token)
        rt = self.parts.runtimes.get(namespace, conversation_id)
        edits = self.parts.store.edits(rt.key, after_id=after, limit=size + 1)
        more = len(edits) > size
        return edits[:size], (str(edits[size - 1].id) if more else "")

    def list_items(
        self,
        namespace: str,
        conversation_id: str,
        page_size: int,
        page_token: str,
        states: Sequence[ItemState],
    ) -> tuple[list[Item], str, dict[int, CompactionRecord]]:
        """The full history: a page of items in seq order with their states, and the
        compaction records of the markers among them, by marker seq."""
        items, token = self._list_items(namespace, conversation_id, page_size, page_token, states)
        markers = [i.seq for i in items if i.kind == "compaction"]
        if not markers:
            return items, token, {}
        rt = self.parts.runtimes.get(namespace, conversation_id)
        return (
            items,
            token,
            {c.marker_seq: c for c in self.parts.store.compactions(rt.key, markers)},
        )

    def watch(self, namespace: str, conversation_id: str, after: int) -> Watch:
        """A stream of the conversation's events after event number `after`.

        Raises:
            ResourceExhausted: over limits.max_watchers streams at once.
        """
        if after < 0:
            raise InvalidArgument(f"after_event_id must be at least 0, got {after}")
        rt = self.parts.runtimes.get(namespace, conversation_id)
        limit = self.parts.limits.max_watchers
        if self.events.count() >= limit:
            raise ResourceExhausted(
                f"{limit} watch streams are open already"
                " (setting limits.max_watchers; each holds a server worker thread)"
            )
        # Under the lock no change of ours is between its commit and its publishing: the
        # subscription starts right after the last event this server made.
        with rt.lock:
            subscription = self.events.subscribe(rt.key, rt.last_event)
        try:
            # Events other servers committed since, whose news came before the subscription.
            self.events.catch_up(rt.key)
        except BaseException:
            subscription.close()
            raise
        return Watch(self.parts.store, self.parts.clock, rt, subscription, after)
